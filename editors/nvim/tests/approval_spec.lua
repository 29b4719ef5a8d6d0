-- Approvals with Neovim's own vim.ui.select: its input list scrolls over every window, so
-- what the call would do must be in what the user sees while choosing (the screen grid
-- while the real inputlist() waits for the answer).
local h = require("helpers")
local approval = require("agentls.approval")

local lib = "pub fn answer() -> u32 {\n    41\n}\n"

local original_inputlist = vim.fn.inputlist

--- Answers the next input lists with `key` (typed, as the user would) and returns a table
--- whose `screens` fill with the screen as it was when the list took the answer.
local function answer_inputlist(key)
  local seen = { screens = {}, choices = {} }
  vim.fn.inputlist = function(choices)
    table.insert(seen.choices, choices)
    vim.api.nvim_feedkeys(key .. "\r", "t", false)
    local picked = original_inputlist(choices)
    -- The screen's rows, a row that is full to the last column joined with the next (the
    -- message area wraps a long line there).
    local text = ""
    for row = 1, vim.o.lines do
      local cells = {}
      for col = 1, vim.o.columns do
        table.insert(cells, vim.fn.screenstring(row, col))
      end
      local line = table.concat(cells)
      local full = vim.fn.strdisplaywidth(line) >= vim.o.columns and not line:match("%s$")
      text = text .. line:gsub("%s+$", "") .. (full and "" or "\n")
    end
    table.insert(seen.screens, "\n" .. text)
    return picked
  end
  return seen
end

local function restore()
  vim.fn.inputlist = original_inputlist
end

local function assert_shown(screen, lines)
  for _, line in ipairs(lines) do
    assert(screen:find("\n" .. line .. "\n", 1, true), "the screen shows " .. vim.inspect(line) .. ":\n" .. screen)
  end
end

test("approval details: the diff, the whole command, nothing for other tools", function()
  h.assert_eq(approval.details({ diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n" }), { "--- a/x", "+++ b/x", "@@ -1 +1 @@", "-a", "+b" })
  h.assert_eq(approval.details({ name = "shell", input = { command = "make all &&\nmake test", cwd = "sub" } }), { "$ make all &&", "  make test", "  (in sub)" })
  h.assert_eq(approval.details({ name = "shell", input = { command = "ls", cwd = "." } }), { "$ ls" })
  h.assert_eq(approval.details({ name = "read_file", input = { path = "a" } }), {})
  h.assert_eq(
    approval.details({ name = "mcpServer", input = { command = "srv -v" }, details = "command: srv -v\nenv: A=${B}\ntrust: readOnly" }),
    { "command: srv -v", "env: A=${B}", "trust: readOnly" }
  )
  h.assert_eq(approval.inline_prompt({ title = "Edit a", diff = "-\tx\n+\ty\n" }, "s2"), "agentls: Edit a [session s2]?\n-    x\n+    y")
  assert(approval.is_stock_select(h.original_select), "Neovim's own select is recognised")
  assert(not approval.is_stock_select(function() end), "a plugin's select is not")
end)

test("with the stock select an edit's diff is on screen while choosing", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "e1", name = "edit_file", arguments = { path = "src/lib.rs", old_text = "    41\n", new_text = "    42\n" } } } },
      { text = { "Changed." } },
    },
  })
  h.setup(ws, url)
  vim.cmd.edit(ws .. "/src/lib.rs")
  local lib_buf = vim.api.nvim_get_current_buf()
  local seen = answer_inputlist("1")
  local ok, err = pcall(function()
    vim.cmd("AgentChat")
    require("agentls.chat").send("Make it 42.")
    h.wait_transcript("Changed.")
  end)
  restore()
  assert(ok, err)
  h.assert_eq(#seen.screens, 1, "one input list")
  assert_shown(seen.screens[1], { "agentls: Edit src/lib.rs?", "-    41", "+    42", "1: Allow" })
  h.assert_eq(vim.api.nvim_buf_get_lines(lib_buf, 1, 2, false), { "    42" }, "the allowed edit landed")
end)

test("with the stock select a write shows its content and a shell call its whole command", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local command = "cargo test --workspace --all-features -- --nocapture the_test_whose_name_is_long_enough_to_be_cut_from_the_title"
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "w1", name = "write_file", arguments = { path = "src/new.rs", content = "pub const NEW: u8 = 1;\n" } } } },
      { toolCalls = { { id = "s1", name = "shell", arguments = { command = command } } } },
      { text = { "Both rejected." } },
    },
  })
  h.setup(ws, url)
  local seen = answer_inputlist("3")
  local ok, err = pcall(function()
    vim.cmd("AgentChat")
    require("agentls.chat").send("Add a file, then test.")
    h.wait_transcript("Both rejected.")
  end)
  restore()
  assert(ok, err)
  h.assert_eq(#seen.screens, 2, "two input lists")
  assert_shown(seen.screens[1], { "agentls: Write src/new.rs?", "+pub const NEW: u8 = 1;" })
  assert_shown(seen.screens[2], { "$ " .. command, "3: Reject" })
  assert(h.transcript():find("Reject: Write src/new.rs", 1, true), h.transcript())
  assert(vim.fn.filereadable(ws .. "/src/new.rs") == 0, "the rejected write left no file")
end)

test("with a picker plugin the whole command is in a float beside it", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local command = "cargo test --workspace --all-features -- --nocapture the_test_whose_name_is_long_enough_to_be_cut_from_the_title"
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "s1", name = "shell", arguments = { command = command } } } },
      { text = { "Rejected." } },
    },
  })
  h.setup(ws, url)
  local floats, prompt
  -- A picker that is not Neovim's own: the float is open while it asks.
  vim.ui.select = function(items, opts, on_choice)
    prompt = opts.prompt
    floats = {}
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(win).relative ~= "" then
        table.insert(floats, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false))
      end
    end
    vim.schedule(function()
      on_choice(items[3])
    end)
  end
  vim.cmd("AgentChat")
  require("agentls.chat").send("Test.")
  h.wait_transcript("Rejected.")
  h.assert_eq(floats, { { "$ " .. command } }, "the float shows the whole command")
  assert(prompt:match("^agentls: Run `cargo test"), prompt)
  assert(not prompt:find("\n", 1, true), "a one-line prompt for a picker: " .. prompt)
  local left = vim.tbl_filter(function(win)
    return vim.api.nvim_win_get_config(win).relative ~= ""
  end, vim.api.nvim_list_wins())
  h.assert_eq(#left, 0, "the float is closed once answered")
end)

test("an approval still open when its turn is cancelled is withdrawn and its float closed", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "s1", name = "shell", arguments = { command = "touch made-by-the-agent" } } } },
    },
  })
  h.setup(ws, url)
  -- A picker that never answers: the user walked away.
  local asked, late_answer = false, nil
  vim.ui.select = function(items, _, on_choice)
    asked = true
    late_answer = function()
      on_choice(items[1])
    end
  end
  vim.cmd("AgentChat")
  require("agentls.chat").send("Make a file.")
  h.wait(function()
    return asked
  end, "the approval was asked")
  local floats = function()
    return #vim.tbl_filter(function(win)
      return vim.api.nvim_win_get_config(win).relative ~= ""
    end, vim.api.nvim_list_wins())
  end
  h.assert_eq(floats(), 1, "the command's float while asking")
  require("agentls.chat").cancel()
  h.wait_transcript("withdrawn (the turn ended before an answer): ")
  h.wait_idle()
  h.assert_eq(floats(), 0, "the float is closed once withdrawn")
  -- The user's late pick changes nothing.
  late_answer()
  vim.wait(50)
  assert(vim.fn.filereadable(ws .. "/made-by-the-agent") == 0, "the withdrawn command did not run")
  assert(not h.transcript():find("Allow", 1, true), h.transcript())
end)

test("away from the chat, a waiting approval and the turn's end are notified", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "s1", name = "shell", arguments = { command = "echo hi" } } } },
      { text = { "Ran it." } },
      { text = { "Again." } },
    },
  })
  h.setup(ws, url)
  local notices = {}
  local original = vim.notify
  vim.notify = function(message, level)
    table.insert(notices, { message = message, level = level })
  end
  local ok, err = xpcall(function()
    local chat = require("agentls.chat")
    -- The chat is closed as soon as the prompt is sent: the user looks elsewhere.
    vim.cmd("AgentChat")
    h.answer_select(function(items)
      return items[1]
    end)
    chat.send("Run it.")
    vim.cmd("AgentChat")
    assert(not chat.is_open(), "the chat is closed")
    h.wait(function()
      return #notices >= 2
    end, "two notices: " .. vim.inspect(notices))
    h.wait_idle()
    h.assert_eq(notices[1].message, "agentls: Run `echo hi` waits for your approval")
    h.assert_eq(notices[2].message, "agentls: the agent finished its turn")
    -- In view, nothing is notified.
    vim.cmd("AgentChat")
    chat.send("Again.")
    h.wait_transcript("Again.")
    h.wait_idle()
    h.assert_eq(#notices, 2, vim.inspect(notices))
  end, debug.traceback)
  vim.notify = original
  if not ok then
    error(err, 0)
  end
end)
