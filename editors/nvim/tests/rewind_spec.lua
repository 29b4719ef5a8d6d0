-- Checkpoints in Neovim: "Rewind to here" (R on a user message of the transcript) shows the
-- dry run's plan, then brings the files and the conversation back (the message returns to
-- the input); :AgentFork opens a fork with the history before the chosen message.
local h = require("helpers")

local function read(path)
  local f = io.open(path)
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

--- The lines of the floating windows open now.
local function float_lines()
  local lines = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      vim.list_extend(lines, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false))
    end
  end
  return lines
end

--- Two turns: one that talks, one that changes notes.txt and creates made.txt by `shell`.
local function two_turns()
  local ws = h.workspace({ ["notes.txt"] = "original\n" })
  local url = h.fake({
    replies = {
      { text = { "First answer." } },
      {
        toolCalls = {
          { id = "s1", name = "shell", arguments = { command = "printf 'changed\\n' > notes.txt && printf 'new' > made.txt" } },
        },
      },
      { text = { "Work done." } },
      { text = { "In the fork." } },
    },
  })
  h.setup(ws, url, { approval = "full-auto" })
  vim.cmd("AgentChat")
  local chat = require("agentls.chat")
  chat.send("first message")
  h.wait_transcript("First answer.")
  h.wait_idle()
  chat.send("second message")
  h.wait_transcript("Work done.")
  h.wait_idle()
  h.assert_eq(read(ws .. "/notes.txt"), "changed\n", "the turn changed notes.txt")
  return ws, url
end

test("the rewind preview lists every file and the conflicts", function()
  local rewind = require("agentls.rewind")
  local lines = rewind.plan_lines({
    restore = { "src/lib.rs" },
    create = { "notes.txt" },
    delete = { "gen/out.txt" },
    conflicts = { "README.md" },
    notStored = {},
    conversation = true,
    message = "make it 42\nplease",
  }, "both")
  h.assert_eq(lines, {
    "Rewind (both)",
    "",
    "restore:",
    "  ~ src/lib.rs",
    "create again:",
    "  + notes.txt",
    "delete:",
    "  - gen/out.txt",
    "conflicts (changed after the agent: left as they are unless forced):",
    "  ! README.md",
    "",
    "the conversation goes back to before: make it 42",
  })
  h.assert_eq(#rewind.choices({ conflicts = {} }), 2)
  h.assert_eq(rewind.choices({ conflicts = { "a" } })[2].id, "force")
end)

test("Rewind to here on a user message shows the plan, then restores the files and the chat", function()
  local ws = two_turns()
  local chat = require("agentls.chat")
  local preview
  local asked = 0
  h.answer_select(function(items)
    asked = asked + 1
    if asked == 1 then
      return items[1] -- both
    end
    preview = float_lines()
    return items[1] -- Rewind
  end)
  -- The cursor on the second message, then R.
  vim.api.nvim_set_current_win(chat.ui.win)
  local lines = vim.api.nvim_buf_get_lines(chat.ui.buf, 0, -1, false)
  local row
  for i, line in ipairs(lines) do
    if line == "second message" then
      row = i
    end
  end
  vim.api.nvim_win_set_cursor(chat.ui.win, { row, 0 })
  vim.cmd.normal("R")
  h.wait(function()
    return read(ws .. "/notes.txt") == "original\n"
  end, "notes.txt restored")
  h.assert_eq(read(ws .. "/made.txt"), nil, "the created file is gone")
  assert(vim.tbl_contains(preview, "  ~ notes.txt"), vim.inspect(preview))
  assert(vim.tbl_contains(preview, "  - made.txt"), vim.inspect(preview))
  h.wait(function()
    return not h.transcript():find("Work done.", 1, true)
  end, "the transcript rewound: " .. h.transcript())
  assert(h.transcript():find("First answer.", 1, true), h.transcript())
  h.assert_eq(vim.api.nvim_buf_get_lines(chat.ui.input, 0, -1, false), { "second message" }, "the message is back in the input")
end)

test(":AgentFork from the second message opens a fork with the first turn only", function()
  two_turns()
  local original = require("agentls").state.session
  h.answer_select(function(items)
    -- Newest first: the second message's checkpoint.
    h.assert_eq(items[1].message, "second message")
    return items[1]
  end)
  vim.cmd("AgentFork")
  h.wait(function()
    return require("agentls").state.session ~= original
  end, "the chat on the fork")
  assert(h.transcript():find("First answer.", 1, true), h.transcript())
  assert(not h.transcript():find("Work done.", 1, true), h.transcript())
  local list = require("agentls").request("agent/session/list", {})
  local fork
  for _, s in ipairs(list.sessions) do
    if s.sessionId == require("agentls").state.session then
      fork = s
    end
  end
  h.assert_eq(fork.forkedFrom, original)
end)

test("an edit the agent made in an open buffer, not saved, is rewound in the buffer", function()
  local lib = "pub fn answer() -> u32 {\n    41\n}\n"
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local edit = { path = "src/lib.rs", old_text = "    41\n", new_text = "    42\n" }
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "e1", name = "edit_file", arguments = edit } } },
      { text = { "Changed." } },
    },
  })
  h.setup(ws, url, { approval = "full-auto" })
  vim.cmd.edit(ws .. "/src/lib.rs")
  local lib_buf = vim.api.nvim_get_current_buf()
  vim.cmd("AgentChat")
  local chat = require("agentls.chat")
  chat.send("make it 42")
  h.wait_transcript("Changed.")
  h.wait_idle()
  h.assert_eq(vim.api.nvim_buf_get_lines(lib_buf, 1, 2, false)[1], "    42", "the edit is in the buffer")
  h.assert_eq(read(ws .. "/src/lib.rs"), lib, "and not saved")
  local preview
  local asked = 0
  h.answer_select(function(items)
    asked = asked + 1
    if asked == 1 then
      return items[2] -- code
    end
    preview = float_lines()
    return items[1]
  end)
  vim.api.nvim_set_current_win(chat.ui.win)
  local lines = vim.api.nvim_buf_get_lines(chat.ui.buf, 0, -1, false)
  for i, line in ipairs(lines) do
    if line == "make it 42" then
      vim.api.nvim_win_set_cursor(chat.ui.win, { i, 0 })
    end
  end
  vim.cmd.normal("R")
  h.wait(function()
    return vim.api.nvim_buf_get_lines(lib_buf, 1, 2, false)[1] == "    41"
  end, "the buffer rewound: " .. vim.inspect(vim.api.nvim_buf_get_lines(lib_buf, 0, -1, false)))
  assert(vim.tbl_contains(preview, "  ~ src/lib.rs"), vim.inspect(preview))
  h.assert_eq(read(ws .. "/src/lib.rs"), lib, "the disk as it was")
end)
