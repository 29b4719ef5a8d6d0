-- :checkhealth agentls

local M = {}

function M.check()
  local health = vim.health
  local agentls = require("agentls")
  health.start("agentls")
  local server, found = agentls.server_cmd()
  local cmd = server[1]
  if vim.fn.executable(cmd) == 1 then
    local version = vim.fn.system({ cmd, "--version" })
    health.ok(string.format("binary %s (%s): %s", vim.fn.exepath(cmd), found, vim.trim(version)))
  else
    health.error(agentls.how_to_build(cmd))
  end
  local clients = vim.lsp.get_clients({ name = "agentls" })
  if #clients > 0 then
    for _, client in ipairs(clients) do
      health.ok(string.format("server running for %s (client %d)", client.config.root_dir or "?", client.id))
    end
  else
    health.info("no agentls server running yet (it starts with the first file of a workspace or :AgentChat)")
  end
  local provider = agentls.config.provider or (agentls.config.settings or {}).provider
  if provider and provider.model then
    health.ok(string.format("provider %s, model %s%s", provider.kind or "openai", provider.model, provider.baseUrl and (" at " .. provider.baseUrl) or ""))
    -- The key variable of each provider.kind (crates/core/src/provider_kind.rs's PRESETS).
    local keys = {
      anthropic = "ANTHROPIC_API_KEY",
      openrouter = "OPENROUTER_API_KEY",
      deepseek = "DEEPSEEK_API_KEY",
      groq = "GROQ_API_KEY",
      mistral = "MISTRAL_API_KEY",
      ollama = "OLLAMA_API_KEY",
    }
    local key = provider.apiKeyEnv or keys[provider.kind] or "OPENAI_API_KEY"
    if (vim.env[key] or "") ~= "" then
      health.ok(key .. " is set")
    elseif provider.baseUrl then
      health.info(key .. " is not set (a local server may not need it)")
    else
      health.error(key .. " is not set: the provider will refuse the requests")
    end
  else
    health.warn("no provider.model configured: setup({ provider = { kind = 'openai', model = '…' } })")
  end
  if agentls.state.last_error then
    health.warn("last error: " .. agentls.state.last_error)
  end
  M.check_sandbox(clients)
  M.check_mcp(clients)
end

--- Each running server's sandbox, asked with agent/sandbox/status: ok when commands run in
--- one, warn when none can be had (or it is off); info for a server without the request.
function M.check_sandbox(clients)
  local health = vim.health
  health.start("agentls sandbox")
  if #clients == 0 then
    health.info("no agentls server running: the sandbox is shown once one runs")
    return
  end
  for _, client in ipairs(clients) do
    local done, result, err = false, nil, nil
    require("agentls").call(client, "request", "agent/sandbox/status", {}, function(e, r)
      done, result, err = true, r, e
    end)
    vim.wait(5000, function()
      return done
    end, 10)
    local prefix = #clients > 1 and string.format("%s: ", client.config.root_dir or "?") or ""
    if not done then
      health.warn(prefix .. "agent/sandbox/status got no answer")
    elseif err and err.code == -32601 then
      health.info(prefix .. "this agentls does not report a sandbox (no agent/sandbox/status): commands are guarded by approvals alone")
    elseif err or type(result) ~= "table" then
      health.warn(prefix .. "agent/sandbox/status failed: " .. (err and err.message or "no answer"))
    else
      local line = require("agentls.mode").health(result)
      health[line[1]](prefix .. line[2])
    end
  end
end

--- Each running server's MCP servers, asked with agent/mcp/status: ok when ready (with its
--- tool count), warn while starting or disabled, error when failed (with the reason).
function M.check_mcp(clients)
  local health = vim.health
  local mcp = require("agentls.mcp")
  health.start("agentls MCP servers")
  if #clients == 0 then
    health.info("no agentls server running: the MCP servers' state is shown once one runs")
    return
  end
  for _, client in ipairs(clients) do
    if #clients > 1 then
      health.info(string.format("for %s (client %d):", client.config.root_dir or "?", client.id))
    end
    local status, err = mcp.fetch(client)
    if err or not status then
      health.warn("agent/mcp/status failed: " .. (err and err.message or "no answer"))
    else
      for _, line in ipairs(mcp.entries(status)) do
        health[line[1]](line[2])
      end
    end
  end
end

return M
