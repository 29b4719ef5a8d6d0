-- The session's mode in Neovim: :AgentMode (with a mode, or a picker) switches the chat's
-- session through agent/session/setMode; the chat's header and the statusline show the mode
-- and the sandbox the server reports; plan mode refuses an edit and auto-edit then makes it.
local h = require("helpers")

local lib = "pub fn answer() -> u32 {\n    41\n}\n"

--- The chat header as drawn (its 'winbar' evaluated).
local function header()
  local win = require("agentls.chat").ui.win
  local winbar = vim.wo[win].winbar
  return vim.api.nvim_eval_statusline(winbar, { winid = win, use_winbar = true, maxwidth = 200 }).str
end

local function wait_mode(mode)
  h.wait(function()
    local status = require("agentls").state.status
    return status and status.mode == mode
  end, "an agent/status with mode " .. mode .. ": " .. vim.inspect(require("agentls").state.status))
end

test("the header and checkhealth words for the mode and each sandbox state", function()
  local mode = require("agentls.mode")
  h.assert_eq(mode.header("ask", nil), "agentls · ask")
  local readonly = { mode = "read-only", available = true, network = false, enforced = true }
  h.assert_eq(mode.header("plan", readonly), "agentls · plan · sandbox: read-only, no network")
  h.assert_eq(mode.health(readonly), { "ok", "sandbox: read-only, no network" })
  local write = { mode = "workspace-write", available = true, network = true, enforced = true }
  h.assert_eq(mode.header("auto-edit", write), "agentls · auto-edit · sandbox: workspace-write")
  local missing = { mode = "workspace-write", available = false, network = false, enforced = false, message = "no Landlock (100%)" }
  h.assert_eq(mode.header("ask", missing), "agentls · ask · %#WarningMsg#sandbox unavailable: no Landlock (100%%)%*")
  h.assert_eq(mode.health(missing), { "warn", "sandbox unavailable: no Landlock (100%): commands are guarded by approvals alone" })
  h.assert_eq(mode.health({ mode = "off", available = true, network = true, enforced = false })[1], "warn")
  h.assert_eq(mode.health(nil), { "info", "the server reports no sandbox" })
  assert(mode.is_mode("plan") and not mode.is_mode("yolo"))
end)

test(":AgentMode plan refuses an edit; :AgentMode auto-edit then changes the buffer", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local edit = { path = "src/lib.rs", old_text = "    41\n", new_text = "    42\n" }
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "e1", name = "edit_file", arguments = edit } } },
      { text = { "Planned: 41 becomes 42." } },
      { toolCalls = { { id = "e2", name = "edit_file", arguments = edit } } },
      { text = { "Changed." } },
    },
  })
  h.setup(ws, url)
  -- Nothing may be asked: plan mode refuses, auto-edit edits without asking.
  local asked = 0
  h.answer_select(function()
    asked = asked + 1
    return nil
  end)
  vim.o.laststatus = 2
  vim.o.statusline = "%{v:lua.require'agentls'.statusline()}"
  vim.cmd.edit(ws .. "/src/lib.rs")
  local lib_buf = vim.api.nvim_get_current_buf()
  vim.cmd("AgentChat")
  h.assert_eq(header():match("^agentls · ask"), "agentls · ask", "the header before the switch")
  vim.cmd("AgentMode plan")
  wait_mode("plan")
  -- The server's status: plan mode's commands run in the read-only sandbox, offline.
  h.assert_eq(header(), "agentls · plan · sandbox: read-only, no network", "the header in plan mode")
  require("agentls.chat").send("Plan the change.")
  h.wait_transcript("Planned: 41 becomes 42.")
  h.wait_idle()
  assert(h.transcript():find("✗", 1, true), "the refused edit's line: " .. h.transcript())
  h.assert_eq(vim.api.nvim_buf_get_lines(lib_buf, 1, 2, false)[1], "    41", "plan mode changed nothing")
  local requests = h.requests(url)
  for _, tool in ipairs(requests[1].body.tools) do
    assert(tool["function"].name ~= "edit_file" and tool["function"].name ~= "write_file", "offered in plan mode: " .. tool["function"].name)
  end
  local refused = vim.json.encode(requests[2].body.messages)
  assert(refused:find("not available in plan mode", 1, true), refused)
  h.wait(function()
    return require("agentls").statusline():find("· plan", 1, true) ~= nil
  end, "the statusline shows plan mode: " .. require("agentls").statusline())

  vim.cmd("AgentMode auto-edit")
  wait_mode("auto-edit")
  h.assert_eq(header(), "agentls · auto-edit · sandbox: workspace-write, no network", "the header after")
  require("agentls.chat").send("Carry it out.")
  h.wait_transcript("Changed.")
  h.assert_eq(vim.api.nvim_buf_get_lines(lib_buf, 1, 2, false)[1], "    42", "the edit reached the buffer")
  h.assert_eq(asked, 0, "nothing was asked")
end)

test(":AgentMode without a mode offers the four modes in a picker", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = {} })
  h.setup(ws, url)
  local offered
  h.answer_select(function(items)
    offered = vim.tbl_map(function(m)
      return m.id
    end, items)
    return items[4]
  end)
  vim.cmd("AgentChat")
  vim.cmd("AgentMode")
  wait_mode("plan")
  h.assert_eq(offered, { "ask", "auto-edit", "full-auto", "plan" })
  h.assert_eq(require("agentls").mode(), "plan")
  h.assert_eq(require("agentls").state.status.sessionId, require("agentls").state.session)
end)

test("checkhealth asks the server for its sandbox", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({ replies = {} })
  h.setup(ws, url)
  assert(require("agentls").session(), "a session")
  vim.cmd("checkhealth agentls")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  pcall(vim.cmd, "tabclose") -- opened in the only tab when it ran first
  local text = table.concat(lines, "\n")
  -- This machine has Landlock: the default sandbox, enforced, with the network off.
  assert(text:find("OK sandbox: workspace-write, no network", 1, true), text)
end)
