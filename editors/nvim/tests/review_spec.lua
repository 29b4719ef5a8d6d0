-- /review: a finding arrives as a diagnostic of the buffer (source "agentls review"), its
-- "Fix with agent" code action sends the server's prompt in the chat, the fix edits the
-- buffer and the diagnostic goes away.
local h = require("helpers")

local committed = "pub fn is_adult(age: u32) -> bool {\n    age >= 18\n}\n"
local planted = "pub fn is_adult(age: u32) -> bool {\n    age > 18\n}\n"

local function review_findings(bufnr)
  return vim.tbl_filter(function(d)
    return d.source == "agentls review"
  end, vim.diagnostic.get(bufnr))
end

test("review: a finding is a diagnostic that Fix with agent clears", function()
  local ws = h.workspace({ ["src/age.rs"] = committed })
  vim.fn.delete(ws .. "/.git", "rf")
  local git = { "git", "-C", ws, "-c", "user.name=t", "-c", "user.email=t@example.com" }
  for _, args in ipairs({ { "init", "-q" }, { "add", "-A" }, { "commit", "-q", "-m", "first" } }) do
    local out = vim.system(vim.list_extend(vim.deepcopy(git), args)):wait()
    assert(out.code == 0, vim.inspect(out))
  end
  local f = assert(io.open(ws .. "/src/age.rs", "w"))
  f:write(planted)
  f:close()
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "f1", name = "report_finding", arguments = { path = "src/age.rs", line = 2, severity = "error", message = "18 is left out" } } } },
      { text = { "One bug." } },
      { toolCalls = { { id = "e1", name = "edit_file", arguments = { path = "src/age.rs", old_text = "age > 18", new_text = "age >= 18" } } } },
      { text = { "Fixed." } },
    },
  })
  h.setup(ws, url, { approval = "auto-edit" })
  vim.cmd.edit(ws .. "/src/age.rs")
  local bufnr = vim.api.nvim_get_current_buf()
  h.wait(function()
    return #vim.lsp.get_clients({ name = "agentls", bufnr = bufnr }) > 0
  end, "agentls did not attach to the buffer")
  local chat = require("agentls.chat")
  chat.open()
  chat.send("/review")
  h.wait_idle()
  h.wait_transcript("Review findings (1):")
  h.wait(function()
    return #review_findings(bufnr) == 1
  end, "the finding's diagnostic")
  local finding = review_findings(bufnr)[1]
  h.assert_eq(finding.lnum, 1)
  h.assert_eq(finding.severity, vim.diagnostic.severity.ERROR)

  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = 1, character = 0 }, ["end"] = { line = 1, character = 0 } },
    context = { diagnostics = {} },
  }
  local answers = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 10000)
  local fix
  for _, answer in pairs(answers or {}) do
    for _, action in ipairs(answer.result or {}) do
      if action.title == "Fix with agent" then
        fix = action.command
      end
    end
  end
  assert(fix, vim.inspect(answers))
  vim.lsp.commands[fix.command](fix, { bufnr = bufnr })
  h.wait_transcript("Fixed.")
  h.wait_idle()
  h.assert_eq(vim.api.nvim_buf_get_lines(bufnr, 1, 2, false), { "    age >= 18" })
  h.wait(function()
    return #review_findings(bufnr) == 0
  end, "the stale finding to clear")
  local requests = h.requests(url)
  local sent = vim.json.encode(requests[3].body.messages)
  assert(sent:find("src/age.rs:2", 1, true) and sent:find("18 is left out", 1, true), sent)
  -- A review does not enter plan mode for the session: no "left plan mode" afterwards.
  assert(not sent:find("left plan mode", 1, true), sent)
end)
