-- agent/editor/lsp: the `lsp` tool asks Neovim's own language servers. Positions are
-- converted between agentls's encoding and each client's; a file no language server
-- serves is an error that says so; and, with a real language server (python-lsp-server,
-- installed by scripts/nvim-test), the model's definition and references come from it and
-- its rename lands in the buffers after approval and is undone by a rewind.
local h = require("helpers")
local editor_lsp = require("agentls.editor_lsp")
local t = editor_lsp._test

test("editor lsp: positions convert between utf-8, utf-16 and utf-32 on the line's text", function()
  local line = "é😀x = answer"
  -- é: 2 bytes, 1 utf-16 unit; 😀: 4 bytes, 2 utf-16 units, 1 utf-32 unit.
  h.assert_eq(t.to_byte(line, "utf-16", 3), 6)
  h.assert_eq(t.to_byte(line, "utf-32", 2), 6)
  h.assert_eq(t.to_byte(line, "utf-8", 6), 6)
  h.assert_eq(t.from_byte(line, "utf-16", 6), 3)
  h.assert_eq(t.from_byte(line, "utf-32", 6), 2)
  h.assert_eq(t.from_byte(line, "utf-16", 100), 13, "clamped to the line")
  local ws = h.workspace({ ["a.py"] = line .. "\n" })
  local uri = vim.uri_from_fname(ws .. "/a.py")
  local range = function(s, e)
    return { start = { line = 0, character = s }, ["end"] = { line = 0, character = e } }
  end
  -- A rename's WorkspaceEdit from a utf-16 server, read by agentls in utf-8.
  local edit = t.convert_result("textDocument/rename", {
    changes = { [uri] = { { range = range(7, 13), newText = "reply" } } },
    documentChanges = { { textDocument = { uri = uri }, edits = { { range = range(7, 13), newText = "reply" } } } },
  }, uri, "utf-16", "utf-8")
  h.assert_eq(edit.changes[uri][1].range, range(10, 16))
  h.assert_eq(edit.documentChanges[1].edits[1].range, range(10, 16))
  local links = t.convert_result("textDocument/definition", {
    { targetUri = uri, targetRange = range(3, 4), targetSelectionRange = range(3, 4) },
  }, uri, "utf-32", "utf-16")
  h.assert_eq(links[1].targetSelectionRange, range(4, 5))
  -- References merge, each place once; single answers take the first non-empty one.
  local at = { uri = uri, range = range(0, 1) }
  h.assert_eq(t.combine("textDocument/references", { { at }, { at, { uri = uri, range = range(2, 3) } } }), { at, { uri = uri, range = range(2, 3) } })
  h.assert_eq(t.combine("textDocument/definition", { vim.NIL, {}, { at } }), { at })
  h.assert_eq(t.combine("textDocument/hover", { vim.NIL }), vim.NIL)
end)

test("editor lsp: a file no language server serves is an error that says so", function()
  local ws = h.workspace({ ["notes.txt"] = "plain words\n" })
  local uri = vim.uri_from_fname(ws .. "/notes.txt")
  local result, err = editor_lsp.on_request(nil, {
    method = "textDocument/definition",
    params = { textDocument = { uri = uri }, position = { line = 0, character = 1 } },
  }, {})
  h.assert_eq(result, nil)
  assert(err and err.message:find("no language server in Neovim serves textDocument/definition", 1, true), vim.inspect(err))
  local _, unknown = editor_lsp.on_request(nil, { method = "textDocument/formatting", params = {} }, {})
  assert(unknown.message:find("unsupported method", 1, true), vim.inspect(unknown))
end)

local LIB = "def answer():\n    return 41\n"
-- Characters of two bytes before the call: a position not converted between agentls's
-- utf-8 and pylsp's utf-16 would miss `answer`. (None beyond the BMP: jedi counts those
-- as one column where utf-16 counts two, a bug of the server's own.)
local MAIN = 'from lib import answer\n\nlabel = "ééééééééééé"; print(label, answer())\n'

local function read(path)
  local f = io.open(path)
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

local function buffer_text(path)
  local bufnr = vim.fn.bufnr(path)
  if bufnr == -1 or not vim.api.nvim_buf_is_loaded(bufnr) then
    return nil
  end
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n"
end

local function tool_output(request, id)
  for _, message in ipairs(request.messages) do
    if message.role == "tool" and message.tool_call_id == id then
      return message.content
    end
  end
  error("no output of " .. id .. " in " .. vim.inspect(request.messages))
end

test("editor lsp: python-lsp-server answers definition and references; its rename is approved and rewound", function()
  local pylsp = os.getenv("AGENTLS_PYLSP")
  assert(pylsp and vim.fn.executable(pylsp) == 1, "no python-lsp-server (scripts/nvim-test installs it): " .. tostring(pylsp))
  local ws = h.workspace({ ["lib.py"] = LIB, ["main.py"] = MAIN })
  local url = h.fake({
    replies = {
      {
        toolCalls = {
          { id = "d1", name = "lsp", arguments = { operation = "definition", path = "main.py", line = 3, symbol = "answer" } },
          { id = "r1", name = "lsp", arguments = { operation = "references", path = "lib.py", line = 1, symbol = "answer" } },
        },
      },
      { text = { "Found." } },
      { toolCalls = { { id = "n1", name = "lsp", arguments = { operation = "rename", path = "lib.py", line = 1, symbol = "answer", new_name = "reply" } } } },
      { text = { "Renamed." } },
    },
  })
  -- The user's configuration of the language server, as in an init.lua.
  local started = 0
  local group = vim.api.nvim_create_augroup("agentls-test-pylsp", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = "python",
    callback = function(args)
      started = started + 1
      vim.lsp.start({ name = "pylsp", cmd = { pylsp }, root_dir = ws }, { bufnr = args.buf })
    end,
  })
  h.setup(ws, url, { approval = "ask" })
  local asked = {}
  h.answer_select(function(items)
    for _, option in ipairs(items) do
      if option.kind == "allowOnce" then
        table.insert(asked, option)
        return option
      end
    end
  end)
  vim.cmd("AgentChat")
  local chat = require("agentls.chat")
  -- No Python buffer is open: the request loads main.py and lib.py, pylsp attaches.
  chat.send("Where is answer defined and used?")
  h.wait_transcript("Found.")
  h.wait_idle()
  assert(started >= 1, "the FileType autocmd started pylsp")
  -- The encodings differ, so every position above was converted.
  h.assert_eq(vim.lsp.get_clients({ name = "agentls" })[1].offset_encoding, "utf-8")
  h.assert_eq(vim.lsp.get_clients({ name = "pylsp" })[1].offset_encoding, "utf-16")
  local request = h.requests(url)[2].body
  local definition = tool_output(request, "d1")
  assert(definition:find("(the editor's language server)", 1, true), definition)
  assert(not definition:find("symbol index", 1, true), definition)
  assert(definition:find("lib.py:1:5", 1, true), definition)
  local references = tool_output(request, "r1")
  assert(references:find("in 2 files", 1, true), references)
  assert(references:find("lib.py:1:5", 1, true), references)
  -- The reference in main.py, at `answer(` after the wide characters (the tool counts
  -- columns in characters, 1-based).
  local col = vim.fn.strchars('label = "ééééééééééé"; print(label, ') + 1
  assert(references:find("main.py:3:" .. col, 1, true), "main.py:3:" .. col .. " in " .. references)
  assert(references:find("main.py:1:17", 1, true), references)

  chat.send("Rename answer to reply.")
  h.wait_transcript("Renamed.")
  h.wait_idle()
  h.assert_eq(#asked, 1, "one approval for the whole rename")
  local renamed = tool_output(h.requests(url)[4].body, "n1")
  assert(renamed:find("Renamed `answer` to `reply`", 1, true), renamed)
  h.assert_eq(buffer_text(ws .. "/lib.py"), LIB:gsub("answer", "reply"), "lib.py's buffer")
  h.assert_eq(buffer_text(ws .. "/main.py"), MAIN:gsub("answer", "reply"), "main.py's buffer")

  -- Rewind the code to before the rename (R on the message, then "code").
  local n = 0
  h.answer_select(function(items)
    n = n + 1
    return n == 1 and items[2] or items[1]
  end)
  vim.api.nvim_set_current_win(chat.ui.win)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(chat.ui.buf, 0, -1, false)) do
    if line == "Rename answer to reply." then
      vim.api.nvim_win_set_cursor(chat.ui.win, { i, 0 })
    end
  end
  vim.cmd.normal("R")
  h.wait(function()
    return buffer_text(ws .. "/lib.py") == LIB and buffer_text(ws .. "/main.py") == MAIN
  end, "the rename rewound in the buffers: " .. vim.inspect({ buffer_text(ws .. "/lib.py"), buffer_text(ws .. "/main.py") }))
  h.assert_eq(read(ws .. "/lib.py"), LIB, "the disk as it was")
  vim.api.nvim_del_augroup_by_id(group)
  for _, client in ipairs(vim.lsp.get_clients({ name = "pylsp" })) do
    client:stop(true)
  end
end)
