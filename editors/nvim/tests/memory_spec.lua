-- The user's memory and rules in Neovim against the real binary: /remember from the chat,
-- :AgentMemory opening the workspace's memory file (and the user's, made on the first :w),
-- :AgentPermissions listing the rules in force.
local h = require("helpers")

test(":AgentMemory opens the memory a /remember wrote, and :AgentPermissions lists the rules", function()
  local ws = h.workspace({ ["src/lib.rs"] = "fn main() {}\n" })
  local url = h.fake({ replies = {} })
  h.setup(ws, url, { settings = { permissions = { deny = { "shell(git push:*)" } } } })
  local chat = require("agentls.chat")
  chat.open()
  chat.send("/remember Tests run with make check.")
  h.wait_transcript("Kept in the workspace memory.")
  h.wait_idle()

  local buf = require("agentls.memory").open("")
  assert(buf, "a buffer")
  local path = vim.api.nvim_buf_get_name(buf)
  assert(path:find(ws .. "/.state/memory/", 1, true), path)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  assert(text:find("] Tests run with make check.", 1, true), text)
  assert(text:find("- [user ", 1, true), text)
  vim.cmd("close")

  -- The user's memory has no file yet: the buffer is new, and :w makes it in a private
  -- directory; the next request carries what was written.
  vim.cmd("AgentMemory user")
  local user_buf = vim.api.nvim_get_current_buf()
  local user_path = vim.api.nvim_buf_get_name(user_buf)
  assert(user_path:find("/agentls/memory/MEMORY.md$"), user_path)
  vim.api.nvim_buf_set_lines(user_buf, 0, -1, false, { "- Prefer tabs." })
  vim.cmd("write")
  vim.cmd("close")
  h.assert_eq(vim.fn.getfperm(vim.fs.dirname(user_path)), "rwx------")
  local state = require("agentls").request("agent/memory", {})
  local user = vim.tbl_filter(function(s)
    return s.scope == "user"
  end, state.scopes)[1]
  h.assert_eq(user.entries, { { author = "user", date = "", text = "Prefer tabs." } })

  local _, err = require("agentls.memory").open("everyone")
  assert(err and err:find("takes user or workspace", 1, true), tostring(err))

  vim.cmd("AgentPermissions")
  local shown = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  h.assert_eq(shown, { "deny  shell(git push:*)  (user)" })
  vim.cmd("close")
end)

test(":AgentMemory keep offers the session's rule and working check, and keeps the one picked", function()
  local ws = h.workspace({ ["src/lib.rs"] = "fn main() {}\n" })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "s1", name = "shell", arguments = { command = "test -f src/lib.rs" } } } },
      { text = { "It is there." } },
    },
  })
  h.setup(ws, url, { approval = "full-auto" })
  local chat = require("agentls.chat")
  chat.open()
  chat.send("Never push to main. Check that src/lib.rs is there.")
  h.wait_transcript("It is there.")
  h.wait_idle()

  local shown
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    shown = vim.tbl_map(opts.format_item, items)
    on_choice(items[1])
  end
  local result, err
  local ok, failure = pcall(function()
    require("agentls.memory").keep(function(r, e)
      result, err = r, e
    end)
  end)
  vim.ui.select = select
  assert(ok, failure)
  h.assert_eq(shown, {
    "[constraint] Never push to main.",
    "[command] `test -f src/lib.rs` works (it exited 0)",
  })
  assert(result and result.kept, vim.inspect({ result, err }))
  local text = table.concat(vim.fn.readfile(result.path), "\n")
  assert(text:find("- [user ", 1, true) and text:find("] Never push to main.", 1, true), text)

  -- What is kept is offered no more.
  local state = require("agentls").request("agent/memory", { sessionId = require("agentls").state.session })
  h.assert_eq(#state.offers, 1)
end)
