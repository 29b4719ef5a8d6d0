-- The user's MCP servers as the server reports them (agent/mcp/status, and the
-- agent/mcp/didChangeStatus notification): their lines for :checkhealth and :AgentMcp, and a
-- vim.notify when a server fails (once per failure).

local M = {}

--- The last status each client sent, by client id.
M.by_client = {}
--- Per client id, the failed servers already notified: name → message.
local notified = {}

local NONE = "no MCP servers: none configured (mcpServers in the settings, "
  .. "~/.config/agentls/settings.json or the workspace's .mcp.json), or none started yet "
  .. "(they start with the first chat session)"

local sources = { workspace = " (.mcp.json)", client = " (from the client)" }

--- One server's line and its level ("ok", "warn", "error" or "info").
function M.entry(server)
  local name = (server.name or "?") .. (sources[server.source] or "")
  local state = server.state or "?"
  if state == "ready" then
    local n = server.tools or 0
    return "ok", string.format("%s: ready, %d tool%s", name, n, n == 1 and "" or "s")
  elseif state == "starting" then
    return "warn", name .. ": starting" .. (server.message and (" again after: " .. server.message) or "")
  elseif state == "disabled" then
    return "warn", name .. ": disabled (enabled: false)"
  elseif state == "failed" then
    return "error", name .. ": failed: " .. (server.message or "no reason given")
  end
  return "info", name .. ": " .. state
end

--- Every server of a status as { level, text }; one info line when there are none.
function M.entries(status)
  local servers = (status and status.servers) or {}
  if #servers == 0 then
    return { { "info", NONE } }
  end
  local out = {}
  for _, server in ipairs(servers) do
    local level, text = M.entry(server)
    table.insert(out, { level, text })
  end
  return out
end

--- agent/mcp/status of `client`, waited for (the editor keeps running): result, err.
function M.fetch(client, timeout_ms)
  local done, result, err = false, nil, nil
  require("agentls").call(client, "request", "agent/mcp/status", {}, function(e, r)
    done, result, err = true, r, e
  end)
  vim.wait(timeout_ms or 5000, function()
    return done
  end, 10)
  if not done then
    return nil, { message = "agent/mcp/status got no answer" }
  end
  return result, err
end

--- agent/mcp/didChangeStatus: remembered, announced as `User AgentlsMcpStatus`, and each new
--- failure shown once.
function M.on_status(_, params, ctx)
  local id = ctx and ctx.client_id or 0
  M.by_client[id] = params
  notified[id] = notified[id] or {}
  for _, server in ipairs((params and params.servers) or {}) do
    if server.state == "failed" then
      local message = server.message or ""
      if notified[id][server.name] ~= message then
        notified[id][server.name] = message
        vim.notify(
          string.format("agentls: MCP server %s failed: %s", server.name, message),
          vim.log.levels.ERROR
        )
      end
    else
      notified[id][server.name] = nil
    end
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "AgentlsMcpStatus", data = params, modeline = false })
end

--- :AgentMcp: the servers of the current workspace's agentls in a float ("q" closes it).
function M.show()
  local result, err = require("agentls").request("agent/mcp/status", {})
  if err or not result then
    return vim.notify("agentls: " .. (err and err.message or "no MCP status"), vim.log.levels.ERROR)
  end
  local marks = { ok = "✓", warn = "!", error = "✗", info = "·" }
  local lines = {}
  for _, line in ipairs(M.entries(result)) do
    table.insert(lines, string.format("%s %s", marks[line[1]], line[2]))
  end
  return require("agentls.float").open(lines, "agentls MCP servers")
end

return M
