-- A session that works apart, in Neovim against the real binary: :AgentWorktree new starts
-- the chat's session in a git worktree (the header shows its branch), its turn changes the
-- worktree and not the workspace, and :AgentWorktree apply brings the work into the buffers;
-- a file the user changed meanwhile is left as it is and listed in the quickfix list.
local h = require("helpers")

local function read(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
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

--- The chat header as drawn (its 'winbar' evaluated).
local function header()
  local win = require("agentls.chat").ui.win
  local winbar = vim.wo[win].winbar
  return vim.api.nvim_eval_statusline(winbar, { winid = win, use_winbar = true, maxwidth = 200 }).str
end

test("the words of a worktree's apply: applied, already there, and each conflict in the quickfix list", function()
  local worktree = require("agentls.worktree")
  local message, level, items = worktree.summary({
    branch = "agentls/session-1",
    applied = { "a.txt", "src/b.txt" },
    unchanged = { "c.txt" },
    conflicts = { { path = "d.txt", reason = "changed in the workspace since the worktree was made" } },
  }, "/repo")
  h.assert_eq(vim.split(message, "\n"), {
    "agentls: applied 2 files of agentls/session-1: a.txt, src/b.txt (in their buffers: :wall writes them)",
    "agentls: already in the workspace: c.txt",
    "agentls: 1 file not applied (left as they are; see the quickfix list): d.txt",
  })
  h.assert_eq(level, vim.log.levels.WARN)
  h.assert_eq(items, {
    { filename = "/repo/d.txt", lnum = 1, col = 1, type = "W", text = "not applied: changed in the workspace since the worktree was made" },
  })
  local again = worktree.summary({ branch = "b", applied = {}, unchanged = { "a.txt" }, conflicts = {} }, "/repo")
  h.assert_eq(again, "agentls: nothing to apply from b: already in the workspace: a.txt")
  h.assert_eq((worktree.summary({ branch = "b", applied = {}, unchanged = {}, conflicts = {} })), "agentls: b changed no file: nothing to apply")
  -- The header: the mode, then the branch (cut first in a narrow window).
  h.assert_eq(require("agentls.mode").header("ask", nil, { branch = "agentls/session-1", path = "/w" }), "agentls · ask · %<%#Special#⎇ agentls/session-1%*")
end)

test(":AgentWorktree new works apart; :AgentWorktree apply brings the work into the buffers, not over the user's change", function()
  local ws = h.workspace({ ["a.txt"] = "one\n", ["b.txt"] = "b1\n", ["c.txt"] = "same\n" })
  h.repository(ws)
  local url = h.fake({
    replies = {
      {
        toolCalls = {
          { id = "e1", name = "edit_file", arguments = { path = "a.txt", old_text = "one\n", new_text = "ONE\n" } },
          { id = "e2", name = "edit_file", arguments = { path = "b.txt", old_text = "b1\n", new_text = "B1\n" } },
        },
      },
      { text = { "Done apart." } },
    },
  })
  h.setup(ws, url, {
    approval = "full-auto",
    settings = { tools = { readBeforeWrite = false }, checks = { afterEdit = "off" } },
  })
  local agentls = require("agentls")
  -- The user looks at c.txt (a file of the workspace): the prompt carries it, and the
  -- session reads it in its worktree.
  vim.cmd.edit(vim.fn.fnameescape(ws .. "/c.txt"))
  vim.cmd("AgentWorktree new")
  local session = agentls.state.session
  assert(session, "a session")
  local worktree = require("agentls.worktree").of(session)
  assert(worktree, "the session's worktree is known")
  h.assert_eq(worktree.branch, "agentls/session-" .. session)
  h.wait_transcript("> ⎇ this session works apart, on branch `" .. worktree.branch .. "`")
  h.wait(function()
    return header():find("⎇ " .. worktree.branch, 1, true) ~= nil
  end, "the header to show the branch; it shows " .. header())
  assert(header():find("^agentls · full%-auto · .*⎇ agentls/session%-"), header())

  require("agentls.chat").send("Change them apart.")
  h.wait_transcript("Done apart.")
  h.wait_idle()
  local sent = vim.json.encode(h.requests(url)[1].body)
  assert(sent:find([[<active_file path=\"c.txt\"]], 1, true), "the editor's file went with the prompt: " .. sent)
  -- The worktree has the work; the workspace (disk and any buffer) does not.
  h.assert_eq(read(worktree.path .. "/a.txt"), "ONE\n")
  h.assert_eq(read(worktree.path .. "/b.txt"), "B1\n")
  h.assert_eq(read(ws .. "/a.txt"), "one\n")
  h.assert_eq(vim.fn.bufloaded(ws .. "/a.txt"), 0, "no buffer of the workspace's a.txt was touched")

  -- Meanwhile the user changes b.txt in the workspace and saves it.
  vim.cmd("split " .. vim.fn.fnameescape(ws .. "/b.txt"))
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "mine" })
  vim.cmd("write")
  -- `a.txt` is open, unchanged.
  vim.cmd("split " .. vim.fn.fnameescape(ws .. "/a.txt"))
  local a_buf = vim.api.nvim_get_current_buf()

  local seen, restore = capture_notify()
  local ok, err = pcall(function()
    vim.cmd("AgentWorktree apply")
  end)
  restore()
  assert(ok, err)
  local said = seen[#seen]
  h.assert_eq(said.level, vim.log.levels.WARN, vim.inspect(seen))
  local lines = vim.split(said.message, "\n")
  h.assert_eq(lines[1], "agentls: applied 1 file of " .. worktree.branch .. ": a.txt (in its buffer: :wall writes it)")
  h.assert_eq(lines[2], "agentls: 1 file not applied (left as they are; see the quickfix list): b.txt")
  -- a.txt's buffer has the work (undoable), b.txt keeps the user's line.
  h.assert_eq(vim.api.nvim_buf_get_lines(a_buf, 0, -1, false), { "ONE" })
  h.assert_eq(vim.bo[a_buf].modified, true)
  h.assert_eq(read(ws .. "/b.txt"), "mine\n")
  h.assert_eq(vim.api.nvim_buf_get_lines(vim.fn.bufnr(ws .. "/b.txt"), 0, -1, false), { "mine" })
  -- The conflict in the quickfix list, with its reason, and the list open.
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  h.assert_eq(qf.title, "agentls: not applied from " .. worktree.branch)
  h.assert_eq(#qf.items, 1)
  h.assert_eq(vim.api.nvim_buf_get_name(qf.items[1].bufnr), ws .. "/b.txt")
  assert(qf.items[1].text:find("^not applied: .*changed in the workspace"), qf.items[1].text)
  h.assert_eq(vim.fn.getqflist({ winid = 1 }).winid ~= 0, true, "the quickfix window is open")

  -- :wall writes the work; applied again, it is already there.
  vim.cmd("wall")
  h.assert_eq(read(ws .. "/a.txt"), "ONE\n")
  seen, restore = capture_notify()
  ok, err = pcall(function()
    vim.cmd("AgentWorktree apply")
  end)
  restore()
  assert(ok, err)
  -- Applied again: a.txt is already there, b.txt still the user's.
  h.assert_eq(vim.split(seen[#seen].message, "\n"), {
    "agentls: already in the workspace: a.txt",
    "agentls: 1 file not applied (left as they are; see the quickfix list): b.txt",
  })

  -- Another session, then this one loaded again in a Neovim that never made it: the
  -- server says where it works, and the header shows the branch.
  vim.cmd("AgentNew")
  agentls.state.worktrees = {}
  h.answer_select(function(items)
    for _, item in ipairs(items) do
      if item.sessionId == session then
        return item
      end
    end
  end)
  vim.cmd("AgentSessions")
  h.wait(function()
    return agentls.state.session == session
  end, "the worktree session to load")
  h.assert_eq(require("agentls.worktree").of(session), worktree)
  h.wait_transcript("> ⎇ this session works apart, on branch `" .. worktree.branch .. "`")
  assert(header():find("⎇ " .. worktree.branch, 1, true), header())
end)

test(":AgentWorktree new outside a repository with a commit says why; apply on a plain session is refused", function()
  local ws = h.workspace({ ["a.txt"] = "one\n" })
  local url = h.fake({ replies = {} })
  h.setup(ws, url)
  local seen, restore = capture_notify()
  local ok, err = pcall(function()
    vim.cmd("AgentWorktree new")
  end)
  restore()
  assert(ok, err)
  h.assert_eq(seen[#seen].level, vim.log.levels.ERROR)
  assert(seen[#seen].message:find("^agentls: no session in a worktree: "), seen[#seen].message)
  h.assert_eq(require("agentls").state.session, nil, "no session is left")

  require("agentls").session()
  seen, restore = capture_notify()
  ok, err = pcall(function()
    vim.cmd("AgentWorktree apply")
  end)
  restore()
  assert(ok, err)
  h.assert_eq(seen[#seen].level, vim.log.levels.WARN)
  assert(seen[#seen].message:find("does not work in a worktree", 1, true), seen[#seen].message)
end)
