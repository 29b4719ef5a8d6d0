local h = require("helpers")

local lib = "pub fn answer() -> u32 {\n    41\n}\n"

local function open_lib(ws)
  vim.cmd.edit(ws .. "/src/lib.rs")
  h.wait(function()
    return #vim.lsp.get_clients({ name = "agentls", bufnr = 0 }) > 0
  end, "agentls did not attach to the buffer")
end

test("a prompt from a visual selection streams its answer into the chat", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = { { text = { "It returns", " 41", " today." }, usage = { 900, 5 } } } })
  h.setup(ws, url)
  open_lib(ws)
  vim.cmd("1,2AgentAsk What does this return?")
  h.wait_transcript("It returns 41 today.")
  local text = h.transcript()
  assert(text:find("## You\n\nWhat does this return?", 1, true), text)
  assert(text:find("## Agent", 1, true), text)
  -- The input is empty again, ready for the next prompt.
  h.assert_eq(vim.api.nvim_buf_get_lines(require("agentls.chat").ui.input, 0, -1, false), { "" })
  -- The model saw the selection as editor context, from the file the user was in.
  local request = h.requests(url)[1].body
  local user = request.messages[#request.messages].content
  assert(user:find("<editor_context>", 1, true), user)
  assert(user:find("src/lib.rs", 1, true), user)
  assert(user:find('<selection lines="1-2">\nL1: pub fn answer() -> u32 {\nL2:     41', 1, true), "the selected lines: " .. user)
end)

test("a tool call is one line whose marker follows its status", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "c1", name = "read_file", arguments = { path = "src/lib.rs" } } } },
      { text = { "Read it." } },
    },
  })
  h.setup(ws, url)
  open_lib(ws)
  vim.cmd("AgentChat")
  require("agentls.chat").send("Read the library.")
  h.wait_transcript("Read it.")
  local text = h.transcript()
  assert(text:find("- ✓ Read src/lib.rs", 1, true), text)
  assert(not text:find("○", 1, true), "no pending marker is left: " .. text)
end)

test("an approved edit changes the buffer, undoably", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "e1", name = "edit_file", arguments = { path = "src/lib.rs", old_text = "    41\n", new_text = "    42\n" } } } },
      { text = { "Changed." } },
    },
  })
  h.setup(ws, url)
  open_lib(ws)
  local lib_buf = vim.api.nvim_get_current_buf()
  local offered
  h.answer_select(function(items)
    offered = vim.tbl_map(function(o)
      return o.kind
    end, items)
    for _, option in ipairs(items) do
      if option.kind == "allowOnce" then
        return option
      end
    end
  end)
  vim.cmd("AgentChat")
  require("agentls.chat").send("Make it 42.")
  h.wait_transcript("Changed.")
  h.assert_eq(offered, { "allowOnce", "allowAlways", "rejectOnce", "rejectAlways" })
  h.assert_eq(vim.api.nvim_buf_get_lines(lib_buf, 1, 2, false), { "    42" }, "the buffer")
  assert(h.transcript():find("Allow: Edit src/lib.rs", 1, true), h.transcript())
  vim.api.nvim_buf_call(lib_buf, function()
    vim.cmd("silent undo")
  end)
  h.assert_eq(vim.api.nvim_buf_get_lines(lib_buf, 1, 2, false), { "    41" }, "after undo")
end)

test("a slow turn is cancelled from the chat", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local chunks = {}
  for i = 1, 30 do
    table.insert(chunks, "word" .. i .. " ")
  end
  local url = h.fake({ replies = { { text = chunks, chunkDelayMs = 300 } } })
  h.setup(ws, url)
  vim.cmd("AgentChat")
  require("agentls.chat").send("Talk slowly.")
  h.wait_transcript("word1 ")
  vim.cmd("AgentCancel")
  h.wait_transcript("> turn ended: cancelled")
  assert(not h.transcript():find("word30", 1, true), "the stream stopped")
end)

test("the statusline shows the fill and the compacting state, with progress", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({
    replies = { { text = { "First answer." }, usage = { 1000, 10 } } },
    routes = {
      ["CONTEXT CHECKPOINT COMPACTION"] = { { text = { "[Done] first question answered" }, firstDelayMs = 800 } },
    },
  })
  h.setup(ws, url)
  local statuses, compacting_seen, progress_seen = 0, false, false
  vim.api.nvim_create_autocmd("User", {
    pattern = "AgentlsStatus",
    callback = function()
      statuses = statuses + 1
      if require("agentls").statusline():find("compacting", 1, true) then
        compacting_seen = true
      end
    end,
  })
  vim.api.nvim_create_autocmd("LspProgress", {
    callback = function()
      if vim.lsp.status():find("Compacting conversation", 1, true) then
        progress_seen = true
      end
    end,
  })
  h.assert_eq(require("agentls").statusline(), "", "nothing before a session")
  vim.cmd("AgentChat")
  require("agentls.chat").send("First question.")
  h.wait_transcript("First answer.")
  h.wait(function()
    return require("agentls").statusline():match("^󰚩 %d+%%$") ~= nil
  end, "the statusline shows the provider's figure: " .. require("agentls").statusline())
  assert(statuses > 0)
  -- Compaction runs in the background: the editor is free while it does.
  vim.cmd("AgentCompact focus on the answer")
  h.wait(function()
    local status = require("agentls").state.status
    return status and status.compactions == 1 and status.state ~= "compacting"
  end, "the compaction ended")
  assert(compacting_seen, "the statusline said compacting while it ran")
  assert(progress_seen, "vim.lsp.status() showed the compaction's progress")
  assert(not require("agentls").statusline():find("compacting", 1, true))
end)

test("the code action opens the chat with the selection attached", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = {} })
  h.setup(ws, url)
  open_lib(ws)
  local origin = vim.api.nvim_get_current_win()
  local titles = {}
  vim.lsp.buf.code_action({
    range = { start = { 1, 0 }, ["end"] = { 2, 5 } },
    filter = function(action)
      table.insert(titles, action.title)
      return action.title == "Ask agent about this selection"
    end,
    apply = true,
  })
  local chat = require("agentls.chat")
  h.wait(function()
    return chat.is_open() and chat.ui.pending_state ~= nil
  end, "the chat opened from the code action; actions: " .. vim.inspect(titles))
  h.assert_eq(vim.api.nvim_get_current_win(), chat.ui.input_win, "the cursor is in the input")
  local selection = chat.ui.pending_state.selection
  h.assert_eq(selection.start, { line = 0, character = 0 })
  assert(chat.ui.origin_win == origin)
end)

test("a previous session is listed and its transcript loaded", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = { { text = { "Remember me." } } } })
  h.setup(ws, url)
  vim.cmd("AgentChat")
  require("agentls.chat").send("The first session.")
  h.wait_transcript("Remember me.")
  h.wait_idle()
  local first = require("agentls").state.session
  vim.cmd("AgentNew")
  assert(require("agentls").state.session ~= first)
  h.assert_eq(h.transcript(), "", "a new session starts with an empty chat")
  h.answer_select(function(items)
    for _, s in ipairs(items) do
      if s.sessionId == first then
        return s
      end
    end
  end)
  vim.cmd("AgentSessions")
  h.wait_transcript("Remember me.")
  assert(h.transcript():find("The first session.", 1, true))
  h.assert_eq(require("agentls").state.session, first)
end)

test("checkhealth reports the binary, the server and the provider", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = {} })
  h.setup(ws, url)
  open_lib(ws)
  vim.cmd("checkhealth agentls")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert(text:find("binary", 1, true) and text:find("agentls 0.", 1, true), text)
  assert(text:find("server running", 1, true), text)
  assert(text:find("model fake-model", 1, true), text)
end)

test("the fix-diagnostic command and the context float", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = {} })
  h.setup(ws, url)
  open_lib(ws)
  local diagnostic = {
    range = { start = { line = 1, character = 4 }, ["end"] = { line = 1, character = 6 } },
    severity = 1,
    message = "expected 42",
  }
  vim.lsp.commands["agentls.fixDiagnostic"]({ arguments = { vim.uri_from_bufnr(0), diagnostic } }, {})
  local chat = require("agentls.chat")
  h.assert_eq(vim.api.nvim_buf_get_lines(chat.ui.input, 0, -1, false), { "Fix this: expected 42" })
  h.assert_eq(chat.ui.pending_state.position, { line = 1, character = 4 })
  h.assert_eq(chat.ui.pending_state.diagnostics[1].message, "expected 42")
  local buf = require("agentls.commands").context()
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  assert(text:find("tokens", 1, true) and text:find("system", 1, true) and text:find("editor", 1, true), text)
end)

test("a subagent's tool calls are an indented block under its task call", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "t1", name = "task", arguments = { agent = "explore", prompt = "find answer" } } } },
      { text = { "The explorer found it." } },
    },
    routes = {
      ["read-only search subagent of agentls"] = {
        { toolCalls = { { id = "r1", name = "read_file", arguments = { path = "src/lib.rs" } } } },
        { text = { "CHILDTEXT answer() is in src/lib.rs:1" } },
      },
    },
  })
  h.setup(ws, url)
  open_lib(ws)
  vim.cmd("AgentChat")
  require("agentls.chat").send("Where is answer()?")
  h.wait_transcript("The explorer found it.")
  local text = h.transcript()
  assert(text:find("- ✓ explore: find answer\n    - ✓ Read src/lib.rs", 1, true), text)
  assert(not text:find("CHILDTEXT", 1, true), "the child's text is its task's output, not chat text: " .. text)
  assert(not text:find("turn ended", 1, true), text)
end)

test("a slash in the input completes the built-in and custom commands", function()
  local ws = h.workspace({
    ["src/lib.rs"] = lib,
    [".agents/commands/git/commit.md"] = "---\ndescription: Commit the work\nargument-hint: MESSAGE\n---\nCommit: $ARGUMENTS\n",
  })
  local url = h.fake({ replies = {} })
  h.setup(ws, url)
  open_lib(ws)
  vim.cmd("AgentChat")
  local chat = require("agentls.chat")
  local words = vim.tbl_map(function(item)
    return item.word
  end, chat.command_items(""))
  assert(vim.tbl_contains(words, "/compact "), vim.inspect(words))
  assert(vim.tbl_contains(words, "/help"), vim.inspect(words))
  assert(vim.tbl_contains(words, "/git:commit "), vim.inspect(words))
  local git = chat.command_items("gi")
  h.assert_eq(#git, 1)
  h.assert_eq(git[1].abbr, "/git:commit MESSAGE")
  h.assert_eq(git[1].menu, "workspace")
  h.assert_eq(git[1].info, "Commit the work")
  h.assert_eq(vim.bo[chat.ui.input].omnifunc, "v:lua.require'agentls.chat'.omnifunc")
  vim.api.nvim_set_current_win(chat.ui.input_win)
  vim.api.nvim_buf_set_lines(chat.ui.input, 0, -1, false, { "/gi" })
  vim.api.nvim_win_set_cursor(chat.ui.input_win, { 1, 3 })
  h.assert_eq(chat.omnifunc(1, ""), 0)
  h.assert_eq(#chat.omnifunc(0, "/gi"), 1)
end)

test("hook runs and reminders are one line each in the chat", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = { { text = { "Noted." } } } })
  h.setup(ws, url, {
    settings = {
      hooks = {
        UserPromptSubmit = {
          { hooks = { { type = "command", command = "echo 'Sprint rule: every change needs a test.'" } } },
        },
      },
    },
  })
  open_lib(ws)
  vim.cmd("AgentChat")
  require("agentls.chat").send("Plan the work.")
  h.wait_transcript("Noted.")
  local text = h.transcript()
  assert(text:find("> ⚓ UserPromptSubmit hook `echo 'Sprint rule: every change needs a test.'`: ok (", 1, true), text)
  assert(
    text:find("> 🔔 reminder (hook): The UserPromptSubmit hook `echo 'Sprint rule: every change needs a test.'` says: Sprint rule: every change needs a test.", 1, true),
    text
  )
  -- The model got the hook's output.
  local request = h.requests(url)[1].body
  local last = request.messages[#request.messages].content
  assert(last:find("Sprint rule: every change needs a test.", 1, true), last)
  -- The session reopened from its log shows the same two lines.
  local session = require("agentls").state.session
  local loaded = require("agentls").request("agent/session/load", { sessionId = session })
  require("agentls.chat").render(loaded.items)
  local reopened = h.transcript()
  assert(reopened:find("> ⚓ UserPromptSubmit hook `echo 'Sprint rule: every change needs a test.'`: ok (", 1, true), reopened)
  assert(reopened:find("> 🔔 reminder (hook): The UserPromptSubmit hook", 1, true), reopened)
  -- A multi-line message stays one line.
  local line = require("agentls.chat").hook_line({ event = "Stop", command = "a\nb", outcome = "blocked", durationMs = 3, message = "x\ny" })
  h.assert_eq(line, "> ⚓ Stop hook `a b`: blocked (3 ms) — x y")
end)

test(":AgentAsk with an @image.png mention sends the image to a model that takes images", function()
  -- A PNG header of 2x3 pixels: what the server reads of it (its IHDR).
  local png = "\137PNG\r\n\26\n\0\0\0\13IHDR\0\0\0\2\0\0\0\3\8\0\0\0\0\0\0\0\0\0\0\0\0IEND\174B`\130"
  local ws = h.workspace({ ["src/lib.rs"] = lib, ["bug.png"] = png })
  local url = h.fake({ replies = { { text = { "A tiny image." } } } })
  h.setup(ws, url, { provider = { model = "gpt-4o" } })
  open_lib(ws)
  vim.cmd("AgentAsk What is wrong in @bug.png?")
  h.wait_transcript("A tiny image.")
  local request = h.requests(url)[1].body
  local parts = request.messages[#request.messages].content
  assert(type(parts) == "table", "the user message carries parts: " .. vim.inspect(parts))
  local labelled, image = false, nil
  for _, part in ipairs(parts) do
    labelled = labelled or part.text == "[image: bug.png, 2x3]"
    if part.type == "image_url" then
      image = part.image_url.url
    end
  end
  assert(labelled, vim.inspect(parts))
  h.assert_eq(image, "data:image/png;base64," .. vim.base64.encode(png))
end)
