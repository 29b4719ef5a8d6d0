-- The live turn in Neovim: a message sent while a turn runs steers it (default) or waits in
-- the queue; the queue and the running background commands are kept from the server's
-- `queue` and `background` updates, shown in the chat, and withdrawn / stopped from
-- :AgentQueue and :AgentBackground (a picker: choosing a row withdraws the message or stops
-- the command).

local M = {}

M.queue = {} -- the last `queue` update's items: {id, kind = "steering"|"queued", text}
M.background = {} -- the last `background` update's commands: {id, command, state, exitCode?}

local function agentls()
  return require("agentls")
end

--- The choices offered when sending during a turn, the default first.
M.BUSY_CHOICES = {
  { id = "steer", label = "Steer now (joins the running turn after its current tool calls)" },
  { id = "queue", label = "Queue (a turn of its own after this one)" },
}

--- Whether a turn of the chat's session is running.
function M.busy()
  return agentls().state.turn ~= nil
end

--- Sends `text` as a steering message or a queued prompt (`how`: "steer" or "queue").
--- Returns the server's result, or nil and the error.
function M.send_while_busy(session, text, state, how)
  if how == "queue" then
    return agentls().request("agent/session/prompt", { sessionId = session, text = text, editor = state })
  end
  return agentls().request("agent/session/steer", { sessionId = session, text = text, editor = state })
end

--- Asks how to send during a turn; `done(how)` with "steer", "queue" or nil (dismissed).
--- `config.chat.busySend` ("steer" or "queue") answers without asking.
function M.choose(done)
  local preset = (agentls().config.chat or {}).busySend
  if preset == "steer" or preset == "queue" then
    return done(preset)
  end
  vim.ui.select(M.BUSY_CHOICES, {
    prompt = "A turn is running: send how?",
    format_item = function(choice)
      return choice.label
    end,
  }, function(choice)
    done(choice and choice.id or nil)
  end)
end

--- One line per waiting message, for the chat and the picker.
function M.queue_line(item)
  local first = vim.split(item.text or "", "\n", { plain = true })[1] or ""
  return string.format("%s %s", item.kind == "steering" and "↳ steering:" or "⏳ queued:", first)
end

function M.background_line(command)
  local state = command.state == "running" and "running" or ("exited " .. tostring(command.exitCode or "?"))
  return string.format("%s [%s] %s", command.id, state, command.command)
end

--- The chat's update handler for the live kinds; true when it handled `update`.
function M.on_update(update, append_lines)
  local kind = update.kind
  if kind == "queue" then
    M.queue = update.items or {}
    vim.api.nvim_exec_autocmds("User", { pattern = "AgentlsQueue", data = M.queue, modeline = false })
    return true
  elseif kind == "background" then
    M.background = update.commands or {}
    vim.api.nvim_exec_autocmds("User", { pattern = "AgentlsBackground", data = M.background, modeline = false })
    return true
  elseif kind == "steered" then
    if update.blocked then
      append_lines({ "> ✗ steering blocked by a hook: " .. (update.text or "") })
    else
      append_lines({ "", "## You (steering)", "" })
      append_lines(vim.split(update.text or "", "\n", { plain = true }))
      append_lines({ "", "## Agent", "" })
    end
    return true
  end
  return false
end

--- :AgentQueue: the waiting messages; choosing one withdraws it (agent/session/unqueue).
function M.show_queue()
  local session = agentls().state.session
  if not session then
    return vim.notify("agentls: no session", vim.log.levels.INFO)
  end
  if #M.queue == 0 then
    return vim.notify("agentls: nothing is waiting", vim.log.levels.INFO)
  end
  vim.ui.select(M.queue, {
    prompt = "Withdraw which message?",
    format_item = M.queue_line,
  }, function(item)
    if item then
      M.withdraw(item.id)
    end
  end)
end

function M.withdraw(id)
  local session = agentls().state.session
  local result, err = agentls().request("agent/session/unqueue", { sessionId = session, id = id })
  if err or not (result and result.removed) then
    vim.notify("agentls: already used or withdrawn", vim.log.levels.INFO)
  end
  return result and result.removed
end

--- :AgentBackground: the session's background commands; choosing a running one stops it
--- (agent/session/killBackground).
function M.show_background()
  local session = agentls().state.session
  if not session then
    return vim.notify("agentls: no session", vim.log.levels.INFO)
  end
  local result = agentls().request("agent/session/background", { sessionId = session })
  M.background = (result and result.commands) or M.background
  if #M.background == 0 then
    return vim.notify("agentls: no background commands", vim.log.levels.INFO)
  end
  vim.ui.select(M.background, {
    prompt = "Stop which background command?",
    format_item = M.background_line,
  }, function(command)
    if command and command.state == "running" then
      M.stop(command.id)
    end
  end)
end

function M.stop(id)
  local session = agentls().state.session
  local result = agentls().request("agent/session/killBackground", { sessionId = session, id = id })
  return result and result.killed
end

--- :AgentCancel! (stop all): the running turn, the queue and every background command.
function M.stop_all()
  local session = agentls().state.session
  if session then
    agentls().request("agent/session/cancel", { sessionId = session, stopBackground = true })
  end
end

--- For the statusline: "2 queued · 1 bg" (empty when nothing waits or runs).
function M.summary()
  local parts = {}
  if #M.queue > 0 then
    table.insert(parts, #M.queue .. " waiting")
  end
  local running = 0
  for _, command in ipairs(M.background) do
    if command.state == "running" then
      running = running + 1
    end
  end
  if running > 0 then
    table.insert(parts, running .. " bg")
  end
  return table.concat(parts, " · ")
end

return M
