-- The chat panel: a markdown transcript buffer and an input buffer below it. Updates of
-- the running turn are rendered as they arrive: text appended in place (the view follows
-- only when it was at the end), one line per tool call whose status marker is updated
-- through an extmark, the plan as a checklist, warnings and errors as quotes.

local M = {}

local ns = vim.api.nvim_create_namespace("agentls.chat")

local markers = {
  pending = "○",
  in_progress = "◐",
  completed = "✓",
  failed = "✗",
}

M.ui = {
  buf = nil, -- the transcript
  input = nil, -- the input buffer
  win = nil,
  input_win = nil,
  origin_win = nil, -- where the user came from (its editor state goes with the prompt)
  pending_state = nil, -- an editor state set by a code action or :AgentAsk
  text_open = false, -- the last line is the agent's text, still streaming
  calls = {}, -- toolCallId -> extmark id
  messages = {}, -- the user messages: {mark, turnId?, checkpointId?} (rewind.lua)
  edited = {}, -- the files the running turn's edits changed (path -> true), for the hint
}

local function agentls()
  return require("agentls")
end

local function valid(buf)
  return buf and vim.api.nvim_buf_is_valid(buf)
end

local function ensure_buffers()
  local ui = M.ui
  if not valid(ui.buf) then
    ui.buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(ui.buf, "agentls://chat")
    vim.bo[ui.buf].filetype = "markdown"
    vim.bo[ui.buf].modifiable = false
    ui.calls = {}
    ui.messages = {}
    ui.text_open = false
  end
  if not valid(ui.input) then
    ui.input = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(ui.input, "agentls://input")
    vim.bo[ui.input].filetype = "markdown"
    local keys = agentls().config.keymaps
    vim.keymap.set("n", keys.send, M.send, { buffer = ui.input, desc = "agentls: send" })
    vim.keymap.set("i", keys.send_insert, function()
      vim.cmd("stopinsert")
      M.send()
    end, { buffer = ui.input, desc = "agentls: send" })
    for _, buf in ipairs({ ui.buf, ui.input }) do
      vim.keymap.set("n", keys.cancel, M.cancel, { buffer = buf, desc = "agentls: cancel" })
    end
    -- On a user message of the transcript: "Rewind to here" and "Fork from here".
    vim.keymap.set("n", keys.rewind, function()
      local rewind = require("agentls.rewind")
      rewind.rewind(rewind.checkpoint_at_cursor())
    end, { buffer = ui.buf, desc = "agentls: rewind to this message" })
    vim.keymap.set("n", keys.fork, function()
      local rewind = require("agentls.rewind")
      local checkpoint = rewind.checkpoint_at_cursor()
      if checkpoint then
        rewind.fork(checkpoint)
      else
        vim.notify("agentls: no checkpoint for this message", vim.log.levels.WARN)
      end
    end, { buffer = ui.buf, desc = "agentls: fork from this message" })
    vim.keymap.set("n", keys.review, function()
      local message = M.user_message_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
      require("agentls.review").open(message and message.turnId)
    end, { buffer = ui.buf, desc = "agentls: review the changes from this message's turn on" })
    -- `/` at the start of the input completes the slash commands (built-in and custom);
    -- <C-x><C-o> completes them too.
    vim.bo[ui.input].omnifunc = "v:lua.require'agentls.chat'.omnifunc"
    vim.api.nvim_create_autocmd("TextChangedI", {
      buffer = ui.input,
      callback = function()
        local cursor = vim.api.nvim_win_get_cursor(0)
        local line = vim.api.nvim_get_current_line()
        if cursor[1] == 1 and cursor[2] == 1 and line:sub(1, 1) == "/" then
          M.complete_commands()
        end
      end,
    })
  end
end

--- The completion items of the slash commands (`agent/session/commands`) matching `prefix`
--- (without the slash).
function M.command_items(prefix)
  local session = agentls().session()
  if not session then
    return {}
  end
  local result = agentls().request("agent/session/commands", { sessionId = session }, 5000)
  local items = {}
  for _, command in ipairs(result and result.commands or {}) do
    if vim.startswith(command.name, prefix or "") then
      table.insert(items, {
        word = "/" .. command.name .. (command.argumentHint and " " or ""),
        abbr = "/" .. command.name .. (command.argumentHint and (" " .. command.argumentHint) or ""),
        menu = command.source,
        info = command.description or "",
      })
    end
  end
  return items
end

--- Opens the completion menu of slash commands at the start of the input line.
function M.complete_commands()
  local line = vim.api.nvim_get_current_line()
  local prefix = line:match("^/(%S*)$")
  if not prefix then
    return
  end
  local items = M.command_items(prefix)
  if #items > 0 and vim.fn.mode() == "i" then
    vim.fn.complete(1, items)
  end
end

--- 'omnifunc' of the input: slash commands at the start of the first line.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local line = vim.api.nvim_get_current_line()
    if vim.api.nvim_win_get_cursor(0)[1] == 1 and line:sub(1, 1) == "/" then
      return 0
    end
    return -3
  end
  return M.command_items((base or ""):gsub("^/", ""))
end

--- Writes to the transcript (which the user cannot edit).
local function with_transcript(fn)
  local buf = M.ui.buf
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn, buf)
  vim.bo[buf].modifiable = false
  if not ok then
    error(err)
  end
end

--- Whether the transcript window shows its last line (then it follows new text).
local function at_end()
  local win = M.ui.win
  if not (win and vim.api.nvim_win_is_valid(win)) then
    return false
  end
  return vim.api.nvim_win_get_cursor(win)[1] >= vim.api.nvim_buf_line_count(M.ui.buf) - 1
end

local function follow(was_at_end)
  local win = M.ui.win
  if was_at_end and win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(M.ui.buf), 0 })
  end
end

--- Appends whole lines at the end of the transcript.
local function append_lines(lines)
  ensure_buffers()
  local follows = at_end()
  with_transcript(function(buf)
    local count = vim.api.nvim_buf_line_count(buf)
    local empty = count == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ""
    vim.api.nvim_buf_set_lines(buf, empty and 0 or count, -1, false, lines)
  end)
  M.ui.text_open = false
  follow(follows)
end

--- Appends `lines` to the transcript (a notice of the plugin's own).
function M.say(lines)
  append_lines(lines)
end

--- A user message's header ("## You"), marked so "Rewind to here" finds its checkpoint.
local function user_header(turn_id, checkpoint_id)
  append_lines({ "", "## You", "" })
  local row = vim.api.nvim_buf_line_count(M.ui.buf) - 2
  local keys = agentls().config.keymaps
  local mark = vim.api.nvim_buf_set_extmark(M.ui.buf, ns, row, 0, {
    virt_text = { { string.format("  %s rewind · %s fork · %s review changes", keys.rewind, keys.fork, keys.review), "Comment" } },
  })
  M.ui.edited = {}
  local message = { mark = mark, turnId = turn_id, checkpointId = checkpoint_id }
  table.insert(M.ui.messages, message)
  return message
end

--- The user message at or above transcript row `row` (0-based).
function M.user_message_at(row)
  local found
  for _, message in ipairs(M.ui.messages) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(M.ui.buf, ns, message.mark, {})
    if pos[1] and pos[1] <= row then
      found = message
    end
  end
  return found
end

--- Appends streamed text: continues the last line while the text is open.
local function append_text(text)
  ensure_buffers()
  local follows = at_end()
  with_transcript(function(buf)
    local pieces = vim.split(text, "\n", { plain = true })
    if not M.ui.text_open then
      vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "" })
    end
    local last = vim.api.nvim_buf_line_count(buf) - 1
    local line = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1]
    vim.api.nvim_buf_set_text(buf, last, #line, last, #line, pieces)
  end)
  M.ui.text_open = true
  follow(follows)
end

local function tool_line(update)
  local marker = markers[update.status] or markers.pending
  return string.format("- %s %s", marker, update.title or update.name or "tool")
end

local function set_call_status(id, status)
  local mark = M.ui.calls[id]
  if not mark then
    return
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(M.ui.buf, ns, mark, {})
  if not pos[1] then
    return
  end
  local line = vim.api.nvim_buf_get_lines(M.ui.buf, pos[1], pos[1] + 1, false)[1] or ""
  local updated = line:gsub("^(%s*)%- [^ ]+ ", "%1- " .. (markers[status] or markers.pending) .. " ", 1)
  with_transcript(function(buf)
    vim.api.nvim_buf_set_lines(buf, pos[1], pos[1] + 1, false, { updated })
  end)
  -- set_lines replaced the line: put the mark back on it.
  M.ui.calls[id] = vim.api.nvim_buf_set_extmark(M.ui.buf, ns, pos[1], 0, { id = mark })
end

--- An update of a subagent's session (it carries the parent's `task` call): its tool calls
--- are an indented block under that call; its text is not shown (its final message is the
--- task's output).
local function on_child_update(params)
  local update = params.update
  local key = (params.sessionId or "") .. "/" .. (update.toolCallId or "")
  if update.kind == "toolCall" then
    append_lines({ "    " .. tool_line(update) })
    local last = vim.api.nvim_buf_line_count(M.ui.buf) - 1
    M.ui.calls[key] = vim.api.nvim_buf_set_extmark(M.ui.buf, ns, last, 0, {})
  elseif update.kind == "toolCallUpdate" then
    set_call_status(key, update.status)
  elseif update.kind == "warning" or update.kind == "error" then
    append_lines({ "    > " .. (update.kind == "error" and "✗ " or "⚠ ") .. (update.message or "") })
  end
end

--- A text as one line: newlines become spaces, long texts are cut.
local function one_line(text, max)
  text = tostring(text or ""):gsub("%s*\n%s*", " ")
  if vim.fn.strchars(text) > max then
    text = vim.fn.strcharpart(text, 0, max - 1) .. "…"
  end
  return text
end

--- A hook run (`hook` update) as one line: event, command, outcome, duration, message.
function M.hook_line(update)
  local line = string.format(
    "> ⚓ %s hook `%s`: %s (%d ms)",
    update.event or "?",
    one_line(update.command, 60),
    update.outcome or "?",
    update.durationMs or 0
  )
  if update.message and update.message ~= "" then
    line = line .. " — " .. one_line(update.message, 120)
  end
  return line
end

--- A reminder the model got (`reminder` update) as one line.
function M.reminder_line(update)
  return string.format("> 🔔 reminder (%s): %s", update.source or "?", one_line(update.text, 120))
end

--- One agent/session/update.
function M.on_update(params)
  ensure_buffers()
  local update = params.update or {}
  local kind = update.kind
  if update.parentToolCallId then
    return on_child_update(params)
  end
  if kind == "agentMessageChunk" then
    append_text(update.text or "")
  elseif kind == "agentThoughtChunk" then
    -- Reasoning is shown as a quote, apart from the answer.
    append_lines({ "> 💭 " .. (update.text or ""):gsub("\n", " ") })
  elseif kind == "toolCall" then
    append_lines({ tool_line(update) })
    local last = vim.api.nvim_buf_line_count(M.ui.buf) - 1
    M.ui.calls[update.toolCallId] = vim.api.nvim_buf_set_extmark(M.ui.buf, ns, last, 0, {})
  elseif kind == "toolCallUpdate" then
    set_call_status(update.toolCallId, update.status)
    if update.diff and update.diff.path then
      M.ui.edited[update.diff.path] = true
    end
  elseif kind == "plan" then
    local lines = { "", "### Plan" }
    for _, entry in ipairs(update.entries or {}) do
      local box = entry.status == "completed" and "[x]" or (entry.status == "in_progress" and "[~]" or "[ ]")
      table.insert(lines, string.format("- %s %s", box, entry.content))
    end
    append_lines(lines)
  elseif kind == "warning" then
    append_lines({ "> ⚠ " .. (update.message or "") })
  elseif kind == "error" then
    append_lines({ "> ✗ " .. (update.message or "") })
    agentls().state.last_error = update.message
  elseif kind == "compaction" then
    if update.phase == "completed" then
      append_lines({
        string.format(
          "> ⟳ compacted: %d → %d tokens (%s)",
          update.tokensBefore or 0,
          update.tokensAfter or 0,
          update.strategy or ""
        ),
      })
    elseif update.phase == "failed" then
      append_lines({ "> ⟳ compaction failed: " .. (update.message or "") })
    end
  elseif kind == "hook" then
    append_lines({ M.hook_line(update) })
  elseif kind == "reminder" then
    append_lines({ M.reminder_line(update) })
  elseif kind == "queued" then
    append_lines({ "> queued behind the running turn" })
  elseif require("agentls.live").on_update(update, append_lines) then
    return
  elseif kind == "turnEnd" then
    local reason = update.stopReason
    if reason ~= "endTurn" then
      append_lines({ "> turn ended: " .. tostring(reason) })
    end
    local edited = vim.tbl_count(M.ui.edited or {})
    if edited > 0 then
      local keys = agentls().config.keymaps
      append_lines({
        string.format(
          "> ✎ %d file%s edited: :AgentReview (or %s on your message) to keep or undo each change",
          edited,
          edited == 1 and "" or "s",
          keys.review
        ),
      })
      M.ui.edited = {}
    end
    if reason ~= "cancelled" then
      M.notify_away("turn_end", reason == "endTurn" and "agentls: the agent finished its turn"
        or ("agentls: the turn ended (" .. tostring(reason) .. ")"))
    end
    local state = agentls().state
    -- The end can arrive before the prompt's answer names the turn: remembered so send()
    -- does not mark an ended turn as running (the chat would stay busy for ever).
    state.ended_turns = state.ended_turns or {}
    state.ended_turns[params.turnId] = true
    if state.turn == params.turnId then
      state.turn = nil
    end
  end
end

--- Tells the user `message` when the chat is not in view (`config.notify[what]`): a
--- vim.notify, and the terminal bell with `notify.bell`. Returns whether it did.
function M.notify_away(what, message)
  local notify = agentls().config.notify or {}
  if M.is_open() or notify[what] == false then
    return false
  end
  vim.notify(message, vim.log.levels.INFO)
  if notify.bell then
    vim.fn.chansend(vim.v.stderr, "\a")
  end
  return true
end

function M.on_permission(call, choice, timed_out, withdrawn)
  ensure_buffers()
  local answer = choice and choice.name
    or (withdrawn and "withdrawn (the turn ended before an answer)")
    or (timed_out and "no answer in time (rejected)" or "rejected")
  append_lines({ string.format("> %s: %s", answer, call.title or call.name or "tool call") })
end

--- Shows what an approval is about (a diff, a command) in a float; returns the window.
function M.show_details(title, lines, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].filetype = filetype or "diff"
  vim.bo[buf].modifiable = false
  local width = math.floor(vim.o.columns * 0.7)
  local height = math.min(#vim.api.nvim_buf_get_lines(buf, 0, -1, false) + 1, math.floor(vim.o.lines * 0.6))
  return vim.api.nvim_open_win(buf, false, {
    relative = "editor",
    width = width,
    height = math.max(height, 3),
    row = 2,
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = " " .. (title or "diff") .. " ",
  })
end

function M.is_open()
  return M.ui.win ~= nil and vim.api.nvim_win_is_valid(M.ui.win)
end

--- Opens the chat (transcript above, input below) and puts the cursor in the input.
function M.open()
  ensure_buffers()
  local ui = M.ui
  local current = vim.api.nvim_get_current_win()
  if current ~= ui.win and current ~= ui.input_win then
    ui.origin_win = current
  end
  if not M.is_open() then
    local config = agentls().config.chat
    if config.layout == "float" then
      local width = math.floor(vim.o.columns * 0.6)
      local height = math.floor(vim.o.lines * 0.6)
      ui.win = vim.api.nvim_open_win(ui.buf, true, {
        relative = "editor",
        width = width,
        height = height,
        row = 1,
        col = math.floor((vim.o.columns - width) / 2),
        border = "rounded",
        title = " agentls ",
      })
    else
      vim.cmd("botright vsplit")
      ui.win = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(ui.win, ui.buf)
      vim.api.nvim_win_set_width(ui.win, math.floor(vim.o.columns * config.width))
    end
    vim.wo[ui.win].wrap = true
    vim.wo[ui.win].linebreak = true
    -- The header says which mode the session is in and what guards its commands.
    vim.wo[ui.win].winbar = "%{%v:lua.require'agentls'.chat_header()%}"
    vim.api.nvim_set_current_win(ui.win)
    vim.cmd("belowright split")
    ui.input_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(ui.input_win, ui.input)
    vim.api.nvim_win_set_height(ui.input_win, config.input_height)
  end
  vim.api.nvim_set_current_win(ui.input_win)
end

function M.close()
  for _, win in ipairs({ M.ui.input_win, M.ui.win }) do
    if win and vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
  M.ui.win, M.ui.input_win = nil, nil
end

function M.toggle()
  if M.is_open() then
    M.close()
  else
    M.open()
  end
end

--- Sends what the input holds, with the editor state of the window the user came from.
function M.send(text)
  ensure_buffers()
  local ui = M.ui
  text = text or table.concat(vim.api.nvim_buf_get_lines(ui.input, 0, -1, false), "\n")
  text = vim.trim(text)
  if text == "" then
    return
  end
  local session = agentls().session()
  if not session then
    return
  end
  local state = ui.pending_state
  if not state and ui.origin_win and vim.api.nvim_win_is_valid(ui.origin_win) then
    local bufnr = vim.api.nvim_win_get_buf(ui.origin_win)
    if vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= "" then
      local client = agentls().client(bufnr)
      state = require("agentls.editor_state").from_window(ui.origin_win, client and client.offset_encoding or "utf-16")
    end
  end
  ui.pending_state = nil
  if require("agentls.live").busy() then
    -- A turn runs: steer it (the default) or queue a turn of its own.
    vim.api.nvim_buf_set_lines(ui.input, 0, -1, false, {})
    return require("agentls.live").choose(function(how)
      if not how then
        vim.api.nvim_buf_set_lines(ui.input, 0, -1, false, vim.split(text, "\n", { plain = true }))
        return
      end
      local result, err = require("agentls.live").send_while_busy(session, text, state, how)
      if err or not result then
        append_lines({ "> ✗ " .. (err and err.message or "the message was not taken") })
      elseif how == "queue" or result.steered == false then
        append_lines({ "> queued: " .. text })
      else
        append_lines({ "> ↳ steering (joins the turn after its current tool calls): " .. text })
      end
    end)
  end
  local message = user_header()
  append_lines(vim.split(text, "\n", { plain = true }))
  append_lines({ "", "## Agent", "" })
  vim.api.nvim_buf_set_lines(ui.input, 0, -1, false, {})
  local result, err = agentls().request("agent/session/prompt", { sessionId = session, text = text, editor = state })
  if err or not result then
    append_lines({ "> ✗ " .. (err and err.message or "the prompt was not taken") })
    return
  end
  local ended = agentls().state.ended_turns or {}
  if not ended[result.turnId] then
    agentls().state.turn = result.turnId
  end
  message.turnId = result.turnId
end

function M.cancel()
  local session = agentls().state.session
  if session then
    agentls().request("agent/session/cancel", { sessionId = session })
  end
end

--- Clears the transcript (a new or loaded session).
function M.clear()
  ensure_buffers()
  with_transcript(function(buf)
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
  end)
  M.ui.calls = {}
  M.ui.messages = {}
  M.ui.text_open = false
end

--- Renders a transcript from agent/session/load.
function M.render(items)
  M.clear()
  for _, item in ipairs(items or {}) do
    if item.kind == "user" then
      user_header(nil, item.checkpointId)
      append_lines(vim.split(item.text or "", "\n", { plain = true }))
      append_lines({ "", "## Agent", "" })
    elseif item.kind == "assistant" then
      append_text(item.text or "")
    elseif item.kind == "toolCall" then
      append_lines({ tool_line(item) })
    elseif item.kind == "plan" then
      M.on_update({ update = { kind = "plan", entries = item.entries } })
    elseif item.kind == "compaction" then
      M.on_update({ update = { kind = "compaction", phase = "completed", tokensBefore = item.tokensBefore, tokensAfter = item.tokensAfter, strategy = item.strategy } })
    elseif item.kind == "error" then
      append_lines({ "> ✗ " .. (item.message or "") })
    elseif item.kind == "hook" then
      append_lines({ M.hook_line(item) })
    elseif item.kind == "reminder" then
      append_lines({ M.reminder_line(item) })
    end
  end
end

--- Opens the chat with `text` in the input and `state` to send with it.
function M.prefill(text, state)
  M.open()
  M.ui.pending_state = state
  vim.api.nvim_buf_set_lines(M.ui.input, 0, -1, false, vim.split(text, "\n", { plain = true }))
  vim.api.nvim_win_set_cursor(M.ui.input_win, { vim.api.nvim_buf_line_count(M.ui.input), 0 })
end

return M
