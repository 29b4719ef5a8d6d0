-- What the server sends on its own: turn updates, status, permission requests.

local M = {}

local function agentls()
  return require("agentls")
end

local function on_update(_, params)
  require("agentls.chat").on_update(params)
end

local function on_status(_, params)
  local state = agentls().state
  state.status = params
  vim.api.nvim_exec_autocmds("User", { pattern = "AgentlsStatus", data = params, modeline = false })
  vim.cmd("redrawstatus")
end

--- agent/session/requestPermission: the diff first (for edits), then the options. The
--- answer is the response; the editor keeps running while the user decides.
local function on_permission(_, params)
  local call = params.toolCall or {}
  local diff_win
  if call.diff and call.diff ~= "" then
    diff_win = require("agentls.chat").show_diff(call.title or call.name, call.diff)
  end
  local answered, choice = false, nil
  vim.ui.select(params.options or {}, {
    prompt = "agentls: " .. (call.title or call.name or "tool call") .. "?",
    format_item = function(option)
      return option.name
    end,
  }, function(option)
    answered, choice = true, option
  end)
  local timeout = (agentls().config.settings or {}).approvalTimeoutMs or 300000
  vim.wait(timeout, function()
    return answered
  end, 20)
  if diff_win and vim.api.nvim_win_is_valid(diff_win) then
    vim.api.nvim_win_close(diff_win, true)
  end
  require("agentls.chat").on_permission(call, choice)
  if not choice then
    return { outcome = "cancelled" }
  end
  return { outcome = { optionId = choice.optionId } }
end

function M.table()
  return {
    ["agent/session/update"] = on_update,
    ["agent/status"] = on_status,
    ["agent/session/requestPermission"] = on_permission,
  }
end

return M
