-- User commands and the handlers of the server's code-action commands.

local M = {}

local function agentls()
  return require("agentls")
end

local function chat()
  return require("agentls.chat")
end

local function encoding_of(bufnr)
  local client = agentls().client(bufnr)
  return client and client.offset_encoding or "utf-16"
end

--- A turn still running in the session being left is cancelled: it could not be stopped
--- from the chat any more.
function M.leave_session(next)
  local state = agentls().state
  if state.turn and state.session and state.session ~= next then
    agentls().request_async("agent/session/cancel", { sessionId = state.session }, function() end)
    state.turn = nil
  end
end

function M.new_session()
  M.leave_session()
  agentls().set_session(nil)
  agentls().session()
  chat().clear()
  chat().open()
end

function M.sessions()
  local result, err = agentls().request("agent/session/list", {})
  if err or not result then
    return vim.notify("agentls: " .. (err and err.message or "no sessions"), vim.log.levels.ERROR)
  end
  vim.ui.select(result.sessions or {}, {
    prompt = "agentls sessions",
    format_item = function(s)
      return string.format("%s  (%d turns)  %s", s.title, s.turns or 0, s.sessionId)
    end,
  }, function(choice)
    if not choice then
      return
    end
    local loaded, load_err = agentls().request("agent/session/load", { sessionId = choice.sessionId })
    if load_err or not loaded then
      return vim.notify("agentls: " .. (load_err and load_err.message or "cannot load"), vim.log.levels.ERROR)
    end
    M.leave_session(choice.sessionId)
    agentls().state.worktrees[choice.sessionId] = loaded.worktree
    agentls().set_session(choice.sessionId)
    chat().open()
    chat().render(loaded.items)
    if loaded.worktree then
      chat().say({ require("agentls.worktree").notice(loaded.worktree) })
    end
  end)
end

function M.compact(instructions)
  local session = agentls().session()
  if not session then
    return
  end
  local params = { sessionId = session }
  if instructions and instructions ~= "" then
    params.instructions = instructions
  end
  -- Compaction may wait behind a running turn: never block the editor for it.
  agentls().request_async("agent/session/compact", params, function(err, result)
    if err or not result then
      return vim.notify("agentls: compaction failed: " .. (err and err.message or "?"), vim.log.levels.WARN)
    end
    vim.notify(string.format("agentls: compacted %d → %d tokens (%s)", result.tokensBefore, result.tokensAfter, result.strategy))
  end)
end

--- The context window in a float: one stacked bar by section with tokens and trust, the
--- headroom to the compaction threshold and the compactions so far (context_bar.lua).
function M.context()
  local session = agentls().state.session
  local params = { sessionId = session }
  local win = chat().ui.origin_win
  if not (win and vim.api.nvim_win_is_valid(win)) then
    win = vim.api.nvim_get_current_win()
  end
  local bufnr = vim.api.nvim_win_get_buf(win)
  if vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= "" then
    params.editor = require("agentls.editor_state").from_window(win, encoding_of(bufnr))
  end
  local result, err = agentls().request("agent/session/context", params)
  if err or not result then
    return vim.notify("agentls: " .. (err and err.message or "no context"), vim.log.levels.ERROR)
  end
  local compactions = {}
  local bar = require("agentls.context_bar")
  if session then
    local loaded = agentls().request("agent/session/load", { sessionId = session })
    compactions = bar.compactions_of(loaded and loaded.items)
  end
  local lines = bar.lines(result, compactions, { width = 50 })
  return require("agentls.float").open(lines, "agentls context")
end

--- :AgentMode [mode]: the chat's session in `mode` (agent/session/setMode) from its next
--- tool call on; without one, a picker of the modes. The server's agent/status then shows
--- it in the chat's header and the statusline.
function M.set_mode(mode)
  local modes = require("agentls.mode")
  if not mode or mode == "" then
    return vim.ui.select(modes.MODES, {
      prompt = "agentls mode (now " .. agentls().mode() .. ")",
      format_item = function(m)
        return string.format("%-10s %s", m.id, m.description)
      end,
    }, function(choice)
      if choice then
        M.set_mode(choice.id)
      end
    end)
  end
  if not modes.is_mode(mode) then
    local ids = vim.tbl_map(function(m)
      return m.id
    end, modes.MODES)
    return vim.notify("agentls: unknown mode " .. mode .. ": the modes are " .. table.concat(ids, ", "), vim.log.levels.ERROR)
  end
  local session = agentls().session()
  if not session then
    return
  end
  agentls().request_async("agent/session/setMode", { sessionId = session, mode = mode }, function(err, result)
    if err or not result then
      return vim.notify("agentls: " .. (err and err.message or "setMode got no answer"), vim.log.levels.ERROR)
    end
    agentls().state.modes[session] = result.mode
    agentls().redraw_status()
  end)
end

--- :'<,'>AgentAsk [question]: the chat, with the selection attached.
function M.ask(opts)
  local win = vim.api.nvim_get_current_win()
  local bufnr = vim.api.nvim_get_current_buf()
  local range
  if opts and opts.range and opts.range > 0 then
    local last = vim.api.nvim_buf_get_lines(bufnr, opts.line2 - 1, opts.line2, false)[1] or ""
    range = { opts.line1 - 1, 0, opts.line2 - 1, #last }
  end
  local state = require("agentls.editor_state").from_window(win, encoding_of(bufnr), range)
  chat().ui.origin_win = win
  local question = opts and opts.args or ""
  if question ~= "" then
    chat().open()
    chat().ui.pending_state = state
    chat().send(question)
  else
    chat().prefill("", state)
  end
end

--- The editor state for a code action on `uri`: its window when it is shown, else the
--- current one with the uri put right (the range or diagnostic comes with the action).
local function state_for_uri(uri)
  local bufnr = vim.fn.bufnr(vim.uri_to_fname(uri))
  local win = bufnr > 0 and vim.fn.bufwinid(bufnr) or -1
  if win == -1 then
    win = vim.api.nvim_get_current_win()
  end
  local state = require("agentls.editor_state").from_window(win, encoding_of(vim.api.nvim_win_get_buf(win)))
  state.uri = uri
  return state, win
end

--- agentls.askAboutSelection [uri, range]
local function ask_about_selection(command)
  local uri, range = command.arguments[1], command.arguments[2]
  local state, win = state_for_uri(uri)
  state.selection = range
  chat().ui.origin_win = win
  chat().prefill("", state)
end

--- agentls.fixDiagnostic [uri, diagnostic]
local function fix_diagnostic(command)
  local uri, diagnostic = command.arguments[1], command.arguments[2]
  local state, win = state_for_uri(uri)
  state.position = diagnostic.range.start
  state.diagnostics = { diagnostic }
  chat().ui.origin_win = win
  chat().prefill("Fix this: " .. (diagnostic.message or ""), state)
end

--- agentls.review.fix [uri, diagnostic, {sessionId, findingId, prompt}]: "Fix with agent"
--- on a /review finding sends the server's prompt for it at once, from the finding's place.
local function fix_finding(command)
  local uri, diagnostic, target = command.arguments[1], command.arguments[2], command.arguments[3]
  local state, win = state_for_uri(uri)
  state.position = diagnostic.range.start
  state.diagnostics = { diagnostic }
  chat().ui.origin_win = win
  chat().open()
  chat().ui.pending_state = state
  chat().send(target.prompt)
end

function M.register()
  local commands = {
    AgentChat = { function() chat().toggle() end, {} },
    AgentCancel = {
      function(o)
        if o.bang then
          require("agentls.live").stop_all()
        else
          chat().cancel()
        end
      end,
      { bang = true },
    },
    AgentQueue = { function() require("agentls.live").show_queue() end, {} },
    AgentBackground = { function() require("agentls.live").show_background() end, {} },
    AgentNew = { M.new_session, {} },
    AgentSessions = { M.sessions, {} },
    AgentCompact = { function(o) M.compact(o.args) end, { nargs = "?" } },
    AgentContext = { M.context, {} },
    AgentMcp = { function() require("agentls.mcp").show() end, {} },
    AgentMemory = {
      function(o)
        if o.args == "keep" then
          return require("agentls.memory").keep()
        end
        require("agentls.memory").open(o.args)
      end,
      {
        nargs = "?",
        complete = function()
          return { "workspace", "user", "keep" }
        end,
      },
    },
    AgentPermissions = { function() require("agentls.memory").show_permissions() end, {} },
    AgentAsk = { M.ask, { nargs = "?", range = true } },
    AgentWorktree = {
      function(o)
        require("agentls.worktree").command(o.args)
      end,
      {
        nargs = "?",
        complete = function()
          return { "new", "apply" }
        end,
      },
    },
    AgentRewind = { function() require("agentls.rewind").pick("rewind") end, {} },
    AgentFork = { function() require("agentls.rewind").pick("fork") end, {} },
    AgentReview = {
      function(o)
        require("agentls.review").open(o.args)
      end,
      {
        nargs = "?",
        complete = function()
          return require("agentls.review").complete()
        end,
      },
    },
    AgentMode = {
      function(o)
        M.set_mode(o.args)
      end,
      {
        nargs = "?",
        complete = function()
          return vim.tbl_map(function(m)
            return m.id
          end, require("agentls.mode").MODES)
        end,
      },
    },
  }
  for name, spec in pairs(commands) do
    vim.api.nvim_create_user_command(name, spec[1], vim.tbl_extend("force", { desc = "agentls" }, spec[2]))
  end
  vim.lsp.commands["agentls.askAboutSelection"] = ask_about_selection
  vim.lsp.commands["agentls.fixDiagnostic"] = fix_diagnostic
  vim.lsp.commands["agentls.review.fix"] = fix_finding
end

return M
