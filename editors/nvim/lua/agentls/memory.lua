-- The user's memory and rules from Neovim: :AgentMemory opens a memory's Markdown file to
-- read and edit (agent/memory says where it is), :AgentPermissions shows the permission
-- rules in force (agent/permissions). The server reads both again at each turn: an edit
-- saved here holds from the next one.

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
