-- The user's memory and rules from Neovim: :AgentMemory opens a memory's Markdown file to
-- read and edit (agent/memory says where it is), :AgentPermissions shows the permission
-- rules in force (agent/permissions), :AgentMemory keep offers the chat session's facts
-- worth keeping (its rules, the checks that worked) and keeps the one picked
-- (agent/memory/keep). The server reads both files again at each turn: an edit saved here
-- holds from the next one.

local M = {}

--- :AgentMemory [user|workspace]: the memory's file in a split (its directory made private
--- when missing, so :w works on a first entry). Returns the buffer, or nil and a message.
function M.open(scope)
  scope = (scope == nil or scope == "") and "workspace" or scope
  if scope ~= "user" and scope ~= "workspace" then
    local message = "agentls: :AgentMemory takes user or workspace, not " .. scope
    vim.notify(message, vim.log.levels.ERROR)
    return nil, message
  end
  local result, err = require("agentls").request("agent/memory", {})
  if err or not result then
    local message = "agentls: " .. (err and err.message or "no memory state")
    vim.notify(message, vim.log.levels.ERROR)
    return nil, message
  end
  for _, entry in ipairs(result.scopes or {}) do
    if entry.scope == scope then
      if not entry.path then
        local message = "agentls: there is no place for the " .. scope .. " memory (no home directory)"
        vim.notify(message, vim.log.levels.ERROR)
        return nil, message
      end
      vim.fn.mkdir(vim.fs.dirname(entry.path), "p", tonumber("700", 8))
      vim.cmd("split " .. vim.fn.fnameescape(entry.path))
      return vim.api.nvim_get_current_buf()
    end
  end
  return nil, "agentls: the server named no " .. scope .. " memory"
end

--- The item vim.ui.select shows for an offer.
function M.offer_label(offer)
  return string.format("[%s] %s", offer.source, offer.text)
end

--- :AgentMemory keep: the chat session's offers in vim.ui.select; the one picked is kept in
--- the workspace's memory as the user's. Calls `done(result, err)` when it ends (the keep
--- request's answer, or nil and a message: no session, no offer, nothing picked).
function M.keep(done)
  done = done or function() end
  local agentls = require("agentls")
  local function fail(message, level)
    vim.notify("agentls: " .. message, level or vim.log.levels.ERROR)
    done(nil, message)
  end
  local session = agentls.state.session
  if not session then
    return fail("no chat session: its facts are offered once it has run a turn", vim.log.levels.WARN)
  end
  local result, err = agentls.request("agent/memory", { sessionId = session })
  if err or not result then
    return fail(err and err.message or "no memory state")
  end
  if #(result.offers or {}) == 0 then
    return fail("nothing of this session to keep that the memory does not hold", vim.log.levels.INFO)
  end
  vim.ui.select(result.offers, {
    prompt = "Keep in this workspace's memory:",
    format_item = M.offer_label,
  }, function(offer)
    if not offer then
      return done(nil, "nothing picked")
    end
    local kept, keep_err = agentls.request("agent/memory/keep", { fact = offer.text })
    if keep_err or not kept then
      return fail(keep_err and keep_err.message or "not kept")
    end
    vim.notify("agentls: " .. (kept.kept and "kept: " or "kept already: ") .. offer.text)
    done(kept, nil)
  end)
end

--- The lines :AgentPermissions shows for an agent/permissions result.
function M.permission_lines(result)
  local lines = {}
  for _, rule in ipairs(result.rules or {}) do
    table.insert(lines, string.format("%-5s %s  (%s)", rule.action, rule.rule, rule.source))
  end
  if #lines == 0 then
    table.insert(lines, "no permission rules: permissions.allow/ask/deny in the settings, "
      .. "or deny/ask in the workspace's .agents/settings.json")
  end
  for _, problem in ipairs(result.problems or {}) do
    table.insert(lines, "! " .. problem)
  end
  return lines
end

--- :AgentPermissions: the rules in force, deny first, in a float ("q" closes it).
function M.show_permissions()
  local result, err = require("agentls").request("agent/permissions", {})
  if err or not result then
    return vim.notify("agentls: " .. (err and err.message or "no permission rules"), vim.log.levels.ERROR)
  end
  return require("agentls.float").open(M.permission_lines(result), "agentls permission rules")
end

return M
