-- Checkpoints in Neovim: "Rewind to here" and "Fork from here" on a user message of the
-- chat (keys in the transcript, `:AgentRewind` with a picker of checkpoints, `:AgentFork`).
-- A rewind asks what to restore (both, code, conversation), shows the server's dry run
-- (files to restore, create, delete, and the conflicts: files changed by you after the
-- agent) and only then restores; a conversation rewind reloads the chat and puts the
-- rewound message back in the input. `plan_lines` is pure (tests/rewind_spec.lua).

local M = {}

local function agentls()
  return require("agentls")
end

local function chat()
  return require("agentls.chat")
end

M.RESTORES = {
  { id = "both", description = "the code and the conversation" },
  { id = "code", description = "the files only; the conversation goes on" },
  { id = "conversation", description = "the conversation only; the files stay" },
}

--- The dry run of agent/session/rewind as lines to show before anything is restored.
function M.plan_lines(plan, restore)
  local lines = { "Rewind (" .. restore .. ")", "" }
  local function section(title, paths, marker)
    if paths and #paths > 0 then
      table.insert(lines, title .. ":")
      for _, path in ipairs(paths) do
        table.insert(lines, "  " .. marker .. " " .. path)
      end
    end
  end
  section("restore", plan.restore, "~")
  section("create again", plan.create, "+")
  section("delete", plan.delete, "-")
  section("conflicts (changed after the agent: left as they are unless forced)", plan.conflicts, "!")
  section("not stored (too large): not touched", plan.notStored, "?")
  local files = #(plan.restore or {}) + #(plan.create or {}) + #(plan.delete or {})
  if files == 0 and #(plan.conflicts or {}) == 0 and restore ~= "conversation" then
    table.insert(lines, "no file to change")
  end
  if plan.conversation then
    table.insert(lines, "")
    table.insert(lines, "the conversation goes back to before: " .. vim.split(plan.message or "", "\n")[1])
  end
  return lines
end

--- What the user is asked after the dry run.
function M.choices(plan)
  local choices = { { id = "rewind", label = "Rewind" } }
  if plan.conflicts and #plan.conflicts > 0 then
    table.insert(choices, { id = "force", label = "Rewind and overwrite the conflicts" })
  end
  table.insert(choices, { id = "cancel", label = "Cancel" })
  return choices
end

local function notify_error(err, what)
  vim.notify("agentls: " .. what .. ": " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
end

--- Reloads the chat from the server (after a conversation rewind or a fork).
local function reload(session)
  local loaded, err = agentls().request("agent/session/load", { sessionId = session })
  if err or not loaded then
    return notify_error(err, "cannot load the session")
  end
  chat().open()
  chat().render(loaded.items)
end

--- The rewind itself, once chosen; `done(result)` after it.
local function apply(session, checkpoint, restore, force, done)
  local result, err = agentls().request(
    "agent/session/rewind",
    { sessionId = session, checkpointId = checkpoint, restore = restore, force = force }
  )
  if err or not result then
    return notify_error(err, "rewind failed")
  end
  if result.conversation then
    reload(session)
    chat().prefill(result.message or "")
  end
  local summary = string.format(
    "agentls: rewound (%s): %d restored, %d created, %d deleted",
    restore,
    #result.restore,
    #result.create,
    #result.delete
  )
  if #result.conflicts > 0 then
    summary = summary .. string.format(", %d conflict(s) %s", #result.conflicts, force and "overwritten" or "left as they are")
  end
  for _, failure in ipairs(result.failed or {}) do
    summary = summary .. "\n  not restored: " .. failure.path .. ": " .. failure.error
  end
  vim.notify(summary, #(result.failed or {}) > 0 and vim.log.levels.WARN or vim.log.levels.INFO)
  if done then
    done(result)
  end
end

--- "Rewind to here": asks what to restore (unless `restore`), shows the dry run, asks to go.
function M.rewind(checkpoint, restore, done)
  local session = agentls().state.session
  if not session or not checkpoint then
    return vim.notify("agentls: no checkpoint here", vim.log.levels.WARN)
  end
  if not restore then
    return vim.ui.select(M.RESTORES, {
      prompt = "agentls: rewind what?",
      format_item = function(r)
        return string.format("%-12s %s", r.id, r.description)
      end,
    }, function(choice)
      if choice then
        M.rewind(checkpoint, choice.id, done)
      end
    end)
  end
  local plan, err = agentls().request(
    "agent/session/rewind",
    { sessionId = session, checkpointId = checkpoint, restore = restore, dryRun = true }
  )
  if err or not plan then
    return notify_error(err, "rewind")
  end
  local preview = chat().show_details("rewind preview", M.plan_lines(plan, restore), "markdown")
  vim.ui.select(M.choices(plan), {
    prompt = "agentls: rewind?",
    format_item = function(c)
      return c.label
    end,
  }, function(choice)
    if preview and vim.api.nvim_win_is_valid(preview) then
      vim.api.nvim_win_close(preview, true)
    end
    if choice and choice.id ~= "cancel" then
      apply(session, checkpoint, restore, choice.id == "force", done)
    end
  end)
end

--- "Fork from here": a new session with the history before `checkpoint` (all of it when
--- nil), shown in the chat.
function M.fork(checkpoint)
  local session = agentls().state.session
  if not session then
    return
  end
  local result, err = agentls().request("agent/session/fork", { sessionId = session, checkpointId = checkpoint })
  if err or not result then
    return notify_error(err, "fork failed")
  end
  agentls().set_session(result.sessionId)
  reload(result.sessionId)
  vim.notify("agentls: forked into " .. result.sessionId)
  return result.sessionId
end

--- The session's checkpoints (agent/session/checkpoints), oldest first.
function M.checkpoints()
  local session = agentls().state.session
  if not session then
    return {}
  end
  local result, err = agentls().request("agent/session/checkpoints", { sessionId = session })
  if err or not result then
    notify_error(err, "no checkpoints")
    return {}
  end
  return result.checkpoints
end

--- One picker row: turn, message, what it changed.
function M.format_checkpoint(c)
  return string.format("turn %d  %s  (%d file%s)", c.turn, c.message, #c.files, #c.files == 1 and "" or "s")
end

--- :AgentRewind: a picker of the session's checkpoints, newest first, then `rewind`.
function M.pick(action)
  local listed = M.checkpoints()
  local newest_first = {}
  for i = #listed, 1, -1 do
    table.insert(newest_first, listed[i])
  end
  if #newest_first == 0 then
    return vim.notify("agentls: this session has no checkpoint yet", vim.log.levels.WARN)
  end
  vim.ui.select(newest_first, { prompt = "agentls: checkpoints", format_item = M.format_checkpoint }, function(choice)
    if choice then
      if action == "fork" then
        M.fork(choice.id)
      else
        M.rewind(choice.id)
      end
    end
  end)
end

--- The checkpoint of the user message at or above the cursor of the transcript: the one
--- the chat recorded for it, else the server's checkpoint of that message's turn.
function M.checkpoint_at_cursor()
  local ui = chat().ui
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local message = chat().user_message_at(row)
  if not message then
    return nil
  end
  if message.checkpointId then
    return message.checkpointId
  end
  for _, c in ipairs(M.checkpoints()) do
    if c.turnId == message.turnId then
      message.checkpointId = c.id
      return c.id
    end
  end
  return nil, ui
end

return M
