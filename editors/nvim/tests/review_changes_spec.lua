-- Reviewing a turn's changes in Neovim against the real binary: :AgentReview lists the files
-- a turn changed with their hunks; `u` on a hunk and `U` on a file undo them (through the
-- buffers and on disk), the rest is kept; a hunk whose lines the user changed since is a
-- conflict, told and left alone.
local h = require("helpers")

local function numbered(prefix, n)
  local out = {}
  for i = 1, n do
    table.insert(out, prefix .. i .. "\n")
  end
  return table.concat(out)
end

local A = numbered("a", 20)
local B = "b1\nb2\nb3\n"
local C = "old\n"

local function read(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

--- The buffer of `path` as the text of its file.
local function buffer_text(path)
  local buf = vim.fn.bufnr(path)
  assert(buf > 0 and vim.api.nvim_buf_is_loaded(buf), "a loaded buffer for " .. path)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n", buf
end

--- Collects vim.notify's messages; returns them and a function that restores it.
local function capture_notify()
  local seen = {}
  local original = vim.notify
  vim.notify = function(message, level)
    table.insert(seen, { message = message, level = level })
  end
  return seen, function()
    vim.notify = original
  end
end

--- Puts the cursor of the review on the line `text` (its first occurrence).
local function cursor_on(text)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  for row, line in ipairs(lines) do
    if line == text then
      vim.api.nvim_win_set_cursor(0, { row, 0 })
      return row
    end
  end
  error("the review shows no line " .. vim.inspect(text) .. ":\n" .. table.concat(lines, "\n"))
end

--- A turn that edits a.txt in two far-apart places, rewrites b.txt and c.txt; the user
--- saves the buffers it changed. (Neovim does not announce `documentChanges`: the agent
--- cannot create a file through it.)
local function three_file_turn()
  local ws = h.workspace({ ["a.txt"] = A, ["b.txt"] = B, ["c.txt"] = C })
  local url = h.fake({
    replies = {
      {
        toolCalls = {
          { id = "e1", name = "edit_file", arguments = { path = "a.txt", old_text = "a2\n", new_text = "A2\n" } },
          { id = "e2", name = "edit_file", arguments = { path = "a.txt", old_text = "a18\n", new_text = "A18\nadded\n" } },
          { id = "w1", name = "write_file", arguments = { path = "b.txt", content = "b1\nB2\nb3\n" } },
          { id = "w2", name = "write_file", arguments = { path = "c.txt", content = "new\n" } },
        },
      },
      { text = { "Done." } },
    },
  })
  h.setup(ws, url, {
    approval = "full-auto",
    settings = { tools = { readBeforeWrite = false }, checks = { afterEdit = "off" } },
  })
  vim.cmd("AgentChat")
  require("agentls.chat").send("Change the three files.")
  h.wait_transcript("Done.")
  h.wait_idle()
  h.wait_transcript("> ✎ 3 files edited: :AgentReview (or C on your message) to keep or undo each change")
  vim.cmd("wall")
  local after_a = A:gsub("a2\n", "A2\n", 1):gsub("a18\n", "A18\nadded\n", 1)
  h.assert_eq(read(ws .. "/a.txt"), after_a, "the turn's a.txt, saved")
  return ws
end

test("the review's lines: files, hunks, and the file line each diff line stands for", function()
  local review = require("agentls.review")
  local files = {
    {
      path = "src/x.rs",
      status = "modified",
      changedSince = true,
      hunks = {
        { id = "h1", oldStart = 5, oldLines = 1, newStart = 5, newLines = 2, diff = "@@ -5,1 +5,2 @@\n c2\n c3\n c4\n-old\n+new1\n+new2\n c6\n" },
        { id = "h2", oldStart = 20, oldLines = 1, newStart = 20, newLines = 0, diff = "@@ -20,1 +20,0 @@\n k18\n k19\n k20\n-gone\n" },
      },
    },
    { path = "img.png", status = "added", changedSince = false, hunks = {} },
  }
  local lines, items = review.lines(files, {}, "the last turn")
  h.assert_eq(lines, {
    "agentls review: the last turn (2 files)",
    review.HINT,
    "",
    "▾ M src/x.rs  (2 hunks)  ! changed since",
    "@@ -5,1 +5,2 @@",
    " c2",
    " c3",
    " c4",
    "-old",
    "+new1",
    "+new2",
    " c6",
    "@@ -20,1 +20,0 @@",
    " k18",
    " k19",
    " k20",
    "-gone",
    "▾ A img.png  (whole file, not text)",
  })
  local at = {}
  for row = 4, #lines do
    at[row] = items[row] and { items[row].file, items[row].hunk or 0, items[row].line }
  end
  h.assert_eq(at[4], { 1, 0, 5 }, "the file line: its first hunk")
  h.assert_eq({ at[5], at[6], at[9], at[10], at[11], at[12] }, { { 1, 1, 5 }, { 1, 1, 2 }, { 1, 1, 5 }, { 1, 1, 5 }, { 1, 1, 6 }, { 1, 1, 7 } })
  -- A removal of line 21 after line 20: the context is lines 18-20, the removed line at 21.
  h.assert_eq({ at[13], at[14], at[16], at[17] }, { { 1, 2, 21 }, { 1, 2, 18 }, { 1, 2, 20 }, { 1, 2, 21 } })
  h.assert_eq(at[18], { 2, 0, 1 })
  -- Folded: the file's hunks are hidden.
  local folded = review.lines(files, { ["src/x.rs"] = true })
  h.assert_eq(folded[4], "▸ M src/x.rs  (2 hunks)  ! changed since")
  h.assert_eq(folded[5], "▾ A img.png  (whole file, not text)")
  -- What the keys ask for.
  h.assert_eq(review.change_for(files, items[10], "hunk"), { path = "src/x.rs", hunkIds = { "h1" } })
  h.assert_eq(review.change_for(files, items[10], "file"), { path = "src/x.rs" })
  local none, why = review.change_for(files, items[4], "hunk")
  h.assert_eq(none, nil)
  assert(why:find("put the cursor on a hunk", 1, true), why)
  local _, binary = review.change_for(files, items[18], "hunk")
  assert(binary:find("not text", 1, true), binary)
  h.assert_eq(review.lines({}, {}), { "agentls review: the last turn (0 files)", review.HINT, "", "no change left to review" })
end)

test(":AgentReview: u undoes a hunk, U a whole file, the rest is kept, on disk and in the buffers", function()
  local ws = three_file_turn()
  local seen, restore = capture_notify()
  local ok, err = pcall(function()
    vim.cmd("AgentReview")
    local review_buf = vim.api.nvim_get_current_buf()
    h.assert_eq(vim.api.nvim_buf_get_name(review_buf), "agentls://review")
    local shown = vim.api.nvim_buf_get_lines(review_buf, 0, -1, false)
    h.assert_eq(shown, {
      "agentls review: the last turn (3 files)",
      require("agentls.review").HINT,
      "",
      "▾ M a.txt  (2 hunks)",
      "@@ -1,5 +1,5 @@",
      " a1",
      "-a2",
      "+A2",
      " a3",
      " a4",
      " a5",
      "@@ -15,6 +15,7 @@",
      " a15",
      " a16",
      " a17",
      "-a18",
      "+A18",
      "+added",
      " a19",
      " a20",
      "▾ M b.txt  (1 hunk)",
      "@@ -1,3 +1,3 @@",
      " b1",
      "-b2",
      "+B2",
      " b3",
      "▾ M c.txt  (1 hunk)",
      "@@ -1,1 +1,1 @@",
      "-old",
      "+new",
    })
    assert(shown[2]:find("u/x undo hunk", 1, true) and shown[2]:find("U/X undo file", 1, true), shown[2])

    -- Undo a.txt's second hunk (u on one of its lines), keep its first.
    cursor_on("+added")
    vim.cmd.normal("u")
    local expected_a = A:gsub("a2\n", "A2\n", 1)
    h.assert_eq(read(ws .. "/a.txt"), expected_a, "a.txt on disk")
    local a_text, a_buf = buffer_text(ws .. "/a.txt")
    h.assert_eq(a_text, expected_a, "a.txt's buffer")
    h.assert_eq(vim.bo[a_buf].modified, false, "a.txt's buffer holds what the disk holds")
    h.assert_eq(seen[#seen].message, "agentls: undone a hunk of a.txt")
    -- The list now holds what is left: a.txt's first hunk.
    h.assert_eq(vim.api.nvim_get_current_buf(), review_buf)
    local left = vim.api.nvim_buf_get_lines(review_buf, 0, -1, false)
    h.assert_eq(left[4], "▾ M a.txt  (1 hunk)")
    h.assert_eq(vim.tbl_contains(left, "+added"), false, "the undone hunk is gone from the list")

    -- Undo b.txt whole (U on its file line).
    cursor_on("▾ M b.txt  (1 hunk)")
    vim.cmd.normal("U")
    h.assert_eq(read(ws .. "/b.txt"), B, "b.txt on disk")
    local b_text, b_buf = buffer_text(ws .. "/b.txt")
    h.assert_eq(b_text, B, "b.txt's buffer")
    h.assert_eq(vim.bo[b_buf].modified, false)
    h.assert_eq(seen[#seen].message, "agentls: undone b.txt")

    -- c.txt is kept: nothing to do. The list: a.txt's first hunk and c.txt.
    local rest = vim.api.nvim_buf_get_lines(review_buf, 3, -1, false)
    h.assert_eq(rest, {
      "▾ M a.txt  (1 hunk)",
      "@@ -1,5 +1,5 @@",
      " a1",
      "-a2",
      "+A2",
      " a3",
      " a4",
      " a5",
      "▾ M c.txt  (1 hunk)",
      "@@ -1,1 +1,1 @@",
      "-old",
      "+new",
    })
    h.assert_eq(read(ws .. "/c.txt"), "new\n")
    h.assert_eq((buffer_text(ws .. "/c.txt")), "new\n")
    h.assert_eq(read(ws .. "/a.txt"), expected_a, "a.txt still as the undo left it")

    -- = folds a file; <CR> opens the file at the hunk's line; q closes the review.
    cursor_on("▾ M a.txt  (1 hunk)")
    vim.cmd.normal("=")
    h.assert_eq(vim.api.nvim_buf_get_lines(review_buf, 3, 5, false), { "▸ M a.txt  (1 hunk)", "▾ M c.txt  (1 hunk)" })
    vim.cmd.normal("=")
    cursor_on("+A2")
    vim.cmd.normal(vim.keycode("<CR>"))
    h.assert_eq(vim.api.nvim_buf_get_name(0), ws .. "/a.txt")
    h.assert_eq(vim.api.nvim_win_get_cursor(0)[1], 2)
    vim.api.nvim_set_current_win(vim.fn.bufwinid(review_buf))
    vim.cmd.normal("q")
    h.assert_eq(vim.api.nvim_buf_is_valid(review_buf), false, "q closes the review")
  end)
  restore()
  assert(ok, err)
  for _, n in ipairs(seen) do
    assert(n.level ~= vim.log.levels.ERROR and n.level ~= vim.log.levels.WARN, "no warning: " .. n.message)
  end
end)

test("undoing a hunk whose line the user changed since is a conflict: told, nothing overwritten", function()
  local ws = three_file_turn()
  vim.cmd("AgentReview")
  local review_buf = vim.api.nvim_get_current_buf()
  -- The user changes the second hunk's line in a.txt's buffer and saves.
  local a_buf = vim.fn.bufnr(ws .. "/a.txt")
  vim.api.nvim_buf_set_lines(a_buf, 18, 19, false, { "mine" })
  vim.api.nvim_buf_call(a_buf, function()
    vim.cmd("write")
  end)
  local mine = A:gsub("a2\n", "A2\n", 1):gsub("a18\n", "A18\nmine\n", 1)
  h.assert_eq(read(ws .. "/a.txt"), mine)

  local seen, restore = capture_notify()
  local ok, err = pcall(function()
    -- The review was listed before the change: u on that hunk.
    cursor_on("+added")
    vim.cmd.normal("u")
  end)
  restore()
  assert(ok, err)
  local warning = seen[#seen]
  h.assert_eq(warning.level, vim.log.levels.WARN)
  assert(warning.message:find("agentls: not undone: a.txt: the lines of hunk", 1, true), warning.message)
  assert(warning.message:find("were changed after the agent's change", 1, true), warning.message)
  h.assert_eq(read(ws .. "/a.txt"), mine, "the disk keeps the user's line")
  h.assert_eq((buffer_text(ws .. "/a.txt")), mine, "and the buffer")
  -- The list was asked again: a.txt is marked as changed since.
  h.assert_eq(vim.api.nvim_buf_get_lines(review_buf, 3, 4, false)[1], "▾ M a.txt  (2 hunks)  ! changed since")
end)
