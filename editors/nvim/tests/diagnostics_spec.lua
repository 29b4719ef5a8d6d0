-- agent/editor/diagnostics: the plugin answers with vim.diagnostic.get in LSP's shape, once
-- the buffer's diagnostics change (a language server reporting on the new text), and the
-- server puts the errors near the agent's edit into the output the model reads.
local h = require("helpers")
local diagnostics = require("agentls.diagnostics")

-- Long enough for a diagnostic far from line 2.
local lib = "pub fn answer() -> u32 {\n    41\n}\n" .. string.rep("// filler\n", 60)

local function open_lib(ws)
  vim.cmd.edit(ws .. "/src/lib.rs")
  h.wait(function()
    return #vim.lsp.get_clients({ name = "agentls", bufnr = 0 }) > 0
  end, "agentls did not attach to the buffer")
end

test("diagnostics: the answer waits for the buffer's next diagnostics, in LSP's shape", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  vim.cmd.edit(ws .. "/src/lib.rs")
  local bufnr = vim.api.nvim_get_current_buf()
  local ns = vim.api.nvim_create_namespace("agentls-test-diagnostics")
  diagnostics.track()
  vim.diagnostic.set(ns, bufnr, { { lnum = 0, col = 0, severity = vim.diagnostic.severity.WARN, message = "stale" } })
  -- The agent's edit: the diagnostics above are of the text before it.
  vim.api.nvim_buf_set_lines(bufnr, 1, 2, false, { '    "42"' })
  -- The "language server" reports on the new text a moment after the request.
  vim.defer_fn(function()
    vim.diagnostic.set(ns, bufnr, {
      { lnum = 1, col = 4, end_lnum = 1, end_col = 6, severity = vim.diagnostic.severity.ERROR, message = "mismatched types", source = "rustc" },
    })
  end, 20)
  local uri = vim.uri_from_fname(ws .. "/src/lib.rs")
  local missing = vim.uri_from_fname(ws .. "/src/none.rs")
  -- A settle time no test run reaches: the answer came from DiagnosticChanged.
  local answer = diagnostics.on_request(nil, { uris = { uri, missing }, settleMs = 600000 })
  h.assert_eq(#answer.items, 1, "only the file that has a buffer")
  h.assert_eq(answer.items[1].uri, uri)
  assert(type(answer.items[1].version) == "number", vim.inspect(answer))
  h.assert_eq(answer.items[1].diagnostics, {
    {
      range = { start = { line = 1, character = 4 }, ["end"] = { line = 1, character = 6 } },
      severity = 1,
      message = "mismatched types",
      source = "rustc",
    },
  })
  -- Diagnostics that changed since the text did are answered at once (the settle time
  -- would hold this test for ten minutes otherwise).
  h.assert_eq(#diagnostics.on_request(nil, { uris = { uri }, settleMs = 600000 }).items[1].diagnostics, 1)
  -- A buffer no language server is attached to and nothing ever reported on: at once.
  vim.cmd.edit(ws .. "/src/other.rs")
  local other = vim.uri_from_fname(ws .. "/src/other.rs")
  h.assert_eq(diagnostics.on_request(nil, { uris = { other }, settleMs = 600000 }).items[1].diagnostics, {})
end)

test("diagnostics: the error an edit caused reaches the output the model reads", function()
  local ws = h.workspace({ ["src/lib.rs"] = lib })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "e1", name = "edit_file", arguments = { path = "src/lib.rs", old_text = "    41\n", new_text = '    "42"\n' } } } },
      { text = { "Changed." } },
    },
  })
  h.setup(ws, url, { settings = { diagnostics = { settleMs = 600000 } } })
  open_lib(ws)
  local lib_buf = vim.api.nvim_get_current_buf()
  local ns = vim.api.nvim_create_namespace("agentls-test-rust-analyzer")
  -- Plays the language server: once the edit is in the buffer, it reports on the new text.
  vim.api.nvim_buf_attach(lib_buf, false, {
    on_lines = function()
      vim.schedule(function()
        vim.diagnostic.set(ns, lib_buf, {
          { lnum = 1, col = 4, severity = vim.diagnostic.severity.ERROR, message = "expected `u32`, found `&str`", source = "rustc" },
          { lnum = 50, col = 0, severity = vim.diagnostic.severity.WARN, message = "far from the change", source = "rustc" },
        })
      end)
      return true -- detach: one report is enough
    end,
  })
  h.answer_select(function(items)
    for _, option in ipairs(items) do
      if option.kind == "allowOnce" then
        return option
      end
    end
  end)
  vim.cmd("AgentChat")
  require("agentls.chat").send("Make it 42.")
  h.wait_transcript("Changed.")
  local request = h.requests(url)[2].body
  local output
  for _, message in ipairs(request.messages) do
    if message.role == "tool" and message.tool_call_id == "e1" then
      output = message.content
    end
  end
  assert(output, vim.inspect(request.messages))
  assert(output:find("Diagnostics the editor reports after this change:", 1, true), output)
  assert(output:find("src/lib.rs:2:5 error expected `u32`, found `&str` [rustc]", 1, true), output)
  assert(not output:find("far from the change", 1, true), output)
end)
