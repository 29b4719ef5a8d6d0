-- What the server sends on its own: turn updates, status, permission requests, requests
-- for the editor's diagnostics and for its language servers' answers.

local M = {}

local function agentls()
  return require("agentls")
end

--- Permission requests waiting for the user: key → {session, withdraw}.
local pending_permissions = {}

--- A turn that ended (cancelled, or the server stopped waiting) cannot use an answer any
--- more: its open approvals are withdrawn, their float closed, and the chat says so.
local function withdraw_permissions(session)
  for key, pending in pairs(pending_permissions) do
    if pending.session == session then
      pending_permissions[key] = nil
      pending.withdraw()
    end
  end
end

local function on_update(_, params)
  if (params.update or {}).kind == "turnEnd" and params.sessionId then
    withdraw_permissions(params.sessionId)
  end
  -- Only the session shown in the chat: a turn of a session left behind must not write
  -- into another's transcript. A subagent's session is shown under its parent's call.
  local current = agentls().state.session
  local update = params.update or {}
  local owner = update.parentSessionId or params.sessionId
  if current and owner and owner ~= current then
    return
  end
  require("agentls.chat").on_update(params)
end

local function on_status(_, params)
  local state = agentls().state
  state.status = params
  vim.api.nvim_exec_autocmds("User", { pattern = "AgentlsStatus", data = params, modeline = false })
  agentls().redraw_status()
end

--- agent/session/requestPermission: what the call would do (the diff of an edit or a
--- write, the whole command of a shell call) stays in view while the options are offered:
--- in the prompt of Neovim's own vim.ui.select (its input list covers every window), else
--- in a float beside the picker. The answer is the response; the editor keeps running
--- while the user decides.
local function on_permission(_, params)
  local call = params.toolCall or {}
  local approval = require("agentls.approval")
  local other = params.sessionId and params.sessionId ~= agentls().state.session and params.sessionId or nil
  local stock = approval.is_stock_select()
  local details = approval.details(call)
  local diff_win
  if not stock and #details > 0 then
    diff_win = require("agentls.chat").show_details(call.title or call.name, details, (call.diff and call.diff ~= "") and "diff" or "sh")
  end
  -- The server counts no answer within approvalTimeoutMs as a rejection: stop waiting a
  -- little before, so a late pick is not shown as allowed.
  local timeout = math.max(((agentls().config.settings or {}).approvalTimeoutMs or 300000) - 2000, 1000)
  local answered, choice, timed_out, withdrawn = false, nil, false, false
  local co = coroutine.running()
  local function finish(option, expired, gone)
    if answered then
      return
    end
    answered, choice, timed_out, withdrawn = true, option, expired, gone or false
    if co and coroutine.status(co) == "suspended" then
      coroutine.resume(co)
    end
  end
  local key = {}
  pending_permissions[key] = {
    session = params.sessionId,
    withdraw = function()
      finish(nil, false, true)
    end,
  }
  require("agentls.chat").notify_away("approval", "agentls: " .. (call.title or call.name or "a tool call")
    .. " waits for your approval")
  vim.ui.select(params.options or {}, {
    prompt = stock and approval.inline_prompt(call, other) or approval.question(call, other),
    format_item = function(option)
      return option.name
    end,
  }, function(option)
    vim.schedule(function()
      finish(option, false)
    end)
  end)
  vim.defer_fn(function()
    finish(nil, true)
  end, timeout)
  if co then
    -- Server requests are handled in a coroutine: yield, so the editor (and a picker that
    -- returns at once) keeps running while the user decides.
    if not answered then
      coroutine.yield()
    end
  else
    vim.wait(timeout + 1000, function()
      return answered
    end, 20)
  end
  pending_permissions[key] = nil
  if diff_win and vim.api.nvim_win_is_valid(diff_win) then
    vim.api.nvim_win_close(diff_win, true)
  end
  require("agentls.chat").on_permission(call, choice, timed_out, withdrawn)
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
    ["agent/editor/diagnostics"] = function(...)
      return require("agentls.diagnostics").on_request(...)
    end,
    ["agent/editor/lsp"] = function(...)
      return require("agentls.editor_lsp").on_request(...)
    end,
    ["agent/mcp/didChangeStatus"] = function(...)
      return require("agentls.mcp").on_status(...)
    end,
  }
end

return M
