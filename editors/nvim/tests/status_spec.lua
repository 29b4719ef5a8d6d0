-- The statusline as the user sees it: what is on the screen grid, not what statusline()
-- would return if something redrew it.
local h = require("helpers")

local lib = "pub fn answer() -> u32 {\n    41\n}\n"

--- The text on the screen where `win`'s statusline is drawn.
local function drawn_statusline(win)
  local pos = vim.fn.win_screenpos(win)
  local row = pos[1] + vim.api.nvim_win_get_height(win)
  local cells = {}
  for col = pos[2], pos[2] + vim.api.nvim_win_get_width(win) - 1 do
    table.insert(cells, vim.fn.screenstring(row, col))
  end
  return vim.trim(table.concat(cells))
end

test("after a cancel the file window's statusline drops the running marker", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local chunks = {}
  for i = 1, 30 do
    table.insert(chunks, "word" .. i .. " ")
  end
  local url = h.fake({ replies = { { text = chunks, usage = { 900, 5 }, chunkDelayMs = 300 } } })
  h.setup(ws, url)
  vim.o.laststatus = 2
  vim.o.statusline = "%{v:lua.require'agentls'.statusline()}"
  vim.cmd.edit(ws .. "/src/lib.rs")
  local file_win = vim.api.nvim_get_current_win()
  vim.cmd("AgentChat")
  assert(vim.api.nvim_get_current_win() ~= file_win, "the cursor is in the chat input")
  require("agentls.chat").send("Talk slowly.")
  h.wait_transcript("word1 ")
  h.wait(function()
    return require("agentls").statusline():find("…", 1, true) ~= nil
  end, "the turn shows as running: " .. require("agentls").statusline())
  -- What the event loop does when idle: draw what is pending.
  vim.cmd("redraw")
  local running = drawn_statusline(file_win)
  assert(running:find("…", 1, true), "the file window shows the running marker: " .. running)
  vim.cmd("AgentCancel")
  h.wait_transcript("> turn ended: cancelled")
  h.wait(function()
    local status = require("agentls").state.status
    return status and status.state == "idle"
  end, "the server reported the turn idle")
  vim.cmd("redraw")
  local after = drawn_statusline(file_win)
  h.assert_eq(after, require("agentls").statusline(), "the file window's statusline on screen")
  assert(not after:find("…", 1, true), "no running marker after the cancel: " .. after)
end)

test("a new session clears the figure in every window", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = { { text = { "Done." }, usage = { 900, 5 } } } })
  h.setup(ws, url)
  vim.o.laststatus = 2
  vim.o.statusline = "%{v:lua.require'agentls'.statusline()}"
  vim.cmd.edit(ws .. "/src/lib.rs")
  local file_win = vim.api.nvim_get_current_win()
  vim.cmd("AgentChat")
  require("agentls.chat").send("Answer.")
  h.wait_transcript("Done.")
  h.wait(function()
    return require("agentls").statusline():match("^󰚩 %d+%%$") ~= nil
  end, "the figure after the turn: " .. require("agentls").statusline())
  vim.cmd("redraw")
  h.assert_eq(drawn_statusline(file_win), require("agentls").statusline(), "the figure at the end of the turn")
  vim.cmd("AgentNew")
  vim.cmd("redraw")
  h.assert_eq(drawn_statusline(file_win), "", "the old session's figure is gone from the file window")
end)
