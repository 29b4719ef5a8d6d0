-- agent/editor/lsp: the server's `lsp` tool asks this editor's own language servers
-- (pyright, rust-analyzer, gopls…) one standard request {method, params}; the answer is
-- {result}, the standard result. The file's buffer is loaded (and its filetype set, so
-- that the language servers configured for it attach), the clients attached to it that
-- support the method are asked (agentls itself never), positions are converted between
-- agentls's encoding and each client's, and the first non-empty answer is returned (the
-- lists of references and workspace symbols are merged). Bounded: M.timeout_ms for the
-- whole request (the server waits 20 s), M.max_items per list. No language server for
-- the file, or none that answered in time, is a JSON-RPC error whose message says so.
-- A rename's WorkspaceEdit is only returned: agentls applies it after the user's approval.

local M = {}

--- The bound of one request, attaching included (below the server's 20 s).
M.timeout_ms = 10000
--- The most items of a list in an answer (locations, symbols, a file's edits).
M.max_items = 1000

local METHODS = {
  ["textDocument/definition"] = "first",
  ["textDocument/references"] = "merge",
  ["textDocument/hover"] = "first",
  ["textDocument/documentSymbol"] = "first",
  ["workspace/symbol"] = "merge",
  ["textDocument/rename"] = "first",
}

local function failure(message)
  local lsp = vim.lsp
  return nil, lsp.rpc.rpc_response_error(lsp.protocol.ErrorCodes.RequestFailed, message)
end

-- Position conversion, byte-accurate on the file's lines ----------------------------

local function char_len(first)
  return first >= 0xF0 and 4 or first >= 0xE0 and 3 or first >= 0xC0 and 2 or 1
end

--- `index` code units of `encoding` into `line` → its byte offset (clamped to the line).
local function to_byte(line, encoding, index)
  if encoding == "utf-8" then
    return math.min(index, #line)
  end
  local byte, units = 0, 0
  while byte < #line and units < index do
    local len = char_len(line:byte(byte + 1))
    units = units + ((encoding == "utf-16" and len == 4) and 2 or 1)
    byte = byte + len
  end
  return math.min(byte, #line)
end

--- A byte offset into `line` → code units of `encoding`.
local function from_byte(line, encoding, byte)
  byte = math.min(byte, #line)
  if encoding == "utf-8" then
    return byte
  end
  local at, units = 0, 0
  while at < byte do
    local len = char_len(line:byte(at + 1))
    units = units + ((encoding == "utf-16" and len == 4) and 2 or 1)
    at = at + len
  end
  return units
end

--- The lines of the file at `uri`: its loaded buffer's, else the disk's (read once per
--- answer through `cache`).
local function lines_of(uri, cache)
  if cache[uri] then
    return cache[uri]
  end
  local lines = {}
  local ok, path = pcall(vim.uri_to_fname, uri)
  if ok then
    local bufnr = vim.fn.bufnr(path)
    if bufnr ~= -1 and vim.api.nvim_buf_is_loaded(bufnr) then
      lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
    elseif vim.fn.filereadable(path) == 1 then
      lines = vim.fn.readfile(path)
    end
  end
  cache[uri] = lines
  return lines
end

local function convert_position(pos, line_text, from, to)
  if type(pos) ~= "table" or type(pos.character) ~= "number" then
    return pos
  end
  local text = line_text(pos.line) or ""
  return { line = pos.line, character = from_byte(text, to, to_byte(text, from, pos.character)) }
end

--- A converter of positions in the file at `uri` from encoding `from` to `to`.
local function converter(uri, from, to, cache)
  return function(range_or_pos)
    if from == to or type(range_or_pos) ~= "table" then
      return range_or_pos
    end
    local function line_text(n)
      return lines_of(uri, cache)[(n or 0) + 1]
    end
    if range_or_pos.start then
      return {
        start = convert_position(range_or_pos.start, line_text, from, to),
        ["end"] = convert_position(range_or_pos["end"], line_text, from, to),
      }
    end
    return convert_position(range_or_pos, line_text, from, to)
  end
end

-- Results: converted back to agentls's encoding and bounded --------------------------

local function cut(list)
  if type(list) ~= "table" or not vim.islist(list) then
    return list
  end
  if #list > M.max_items then
    return vim.list_slice(list, 1, M.max_items)
  end
  return list
end

local function each_range(t, keys, convert)
  for _, key in ipairs(keys) do
    if type(t[key]) == "table" then
      t[key] = convert(t[key])
    end
  end
end

--- A Location, LocationLink, SymbolInformation or WorkspaceSymbol, its ranges converted.
local function convert_location(item, from, to, cache)
  if type(item) ~= "table" then
    return item
  end
  if item.targetUri then
    each_range(item, { "targetRange", "targetSelectionRange" }, converter(item.targetUri, from, to, cache))
  elseif item.uri then
    each_range(item, { "range" }, converter(item.uri, from, to, cache))
  elseif type(item.location) == "table" and item.location.uri then
    each_range(item.location, { "range" }, converter(item.location.uri, from, to, cache))
  end
  return item
end

local function convert_document_symbols(symbols, convert, from, to, cache)
  symbols = cut(symbols)
  for _, symbol in ipairs(symbols) do
    if symbol.location then
      convert_location(symbol, from, to, cache)
    else
      each_range(symbol, { "range", "selectionRange" }, convert)
      if symbol.children then
        symbol.children = convert_document_symbols(symbol.children, convert, from, to, cache)
      end
    end
  end
  return symbols
end

local function convert_edits(edits, uri, from, to, cache)
  edits = cut(edits)
  local convert = converter(uri, from, to, cache)
  for _, edit in ipairs(edits) do
    each_range(edit, { "range" }, convert)
  end
  return edits
end

local function convert_workspace_edit(edit, from, to, cache)
  if type(edit.changes) == "table" then
    local changes = {}
    for uri, edits in pairs(edit.changes) do
      changes[uri] = convert_edits(edits, uri, from, to, cache)
    end
    -- An empty table would be sent as a JSON array.
    edit.changes = next(changes) and changes or vim.empty_dict()
  end
  if type(edit.documentChanges) == "table" then
    for _, change in ipairs(edit.documentChanges) do
      if change.textDocument and change.edits then
        change.edits = convert_edits(change.edits, change.textDocument.uri, from, to, cache)
      end
    end
  end
  return edit
end

--- `result` of `method` from a client speaking `from`, in agentls's `to`.
local function convert_result(method, result, uri, from, to)
  local cache = {}
  if type(result) ~= "table" then
    return result
  end
  if method == "textDocument/hover" then
    each_range(result, { "range" }, converter(uri, from, to, cache))
    return result
  end
  if method == "textDocument/rename" then
    return convert_workspace_edit(result, from, to, cache)
  end
  if method == "textDocument/documentSymbol" then
    return convert_document_symbols(result, converter(uri, from, to, cache), from, to, cache)
  end
  if not vim.islist(result) then
    return convert_location(result, from, to, cache) -- one Location
  end
  result = cut(result)
  for _, item in ipairs(result) do
    convert_location(item, from, to, cache)
  end
  return result
end

local function is_empty(result)
  return result == nil or result == vim.NIL or (type(result) == "table" and vim.islist(result) and #result == 0)
end

--- The answers of several clients as one: the first non-empty one, or (references,
--- workspace symbols) every list joined, each place once, cut at M.max_items.
local function combine(method, answers)
  if METHODS[method] == "merge" then
    local merged, seen = {}, {}
    for _, answer in ipairs(answers) do
      for _, item in ipairs(type(answer) == "table" and vim.islist(answer) and answer or {}) do
        local key = vim.json.encode({ item.uri, item.range, item.name, item.location })
        if not seen[key] and #merged < M.max_items then
          seen[key] = true
          table.insert(merged, item)
        end
      end
    end
    return #merged > 0 and merged or vim.NIL
  end
  for _, answer in ipairs(answers) do
    if not is_empty(answer) then
      return answer
    end
  end
  return vim.NIL
end

-- Finding the clients --------------------------------------------------------------

local function serving(bufnr, method, own_id)
  local clients = {}
  local filter = { method = method }
  if bufnr then
    filter.bufnr = bufnr
  end
  for _, client in ipairs(vim.lsp.get_clients(filter)) do
    if client.id ~= own_id and client.name ~= "agentls" then
      table.insert(clients, client)
    end
  end
  return clients
end

--- The loaded buffer of `uri`, with its filetype set so that language servers attach.
local function load(uri)
  local ok, bufnr = pcall(vim.uri_to_bufnr, uri)
  if not ok then
    return nil, "not a file uri: " .. tostring(uri)
  end
  local path = vim.uri_to_fname(uri)
  local fresh = not vim.api.nvim_buf_is_loaded(bufnr)
  if fresh then
    if vim.fn.filereadable(path) == 0 then
      return nil, "no such file: " .. path
    end
    vim.fn.bufload(bufnr)
  end
  if vim.bo[bufnr].filetype == "" then
    local ft = vim.filetype.match({ buf = bufnr, filename = path })
    if ft then
      vim.bo[bufnr].filetype = ft -- FileType: the language servers configured for it start
    end
  end
  return bufnr, nil, fresh
end

--- Waits (yielding the handler's coroutine) until `done()` holds, an LspAttach or a
--- response calls `poke`, or `deadline` (vim.uv.now() ms) passes.
local function waiter(co)
  local w = { woken = false }
  function w.poke()
    w.woken = true
    if co and coroutine.status(co) == "suspended" then
      coroutine.resume(co)
    end
  end
  function w.sleep(deadline)
    w.woken = false
    local left = deadline - vim.uv.now()
    if left <= 0 then
      return
    end
    local timer = vim.defer_fn(w.poke, left)
    if co then
      coroutine.yield()
    else
      vim.wait(left, function()
        return w.woken
      end, 10)
    end
    pcall(function()
      timer:stop()
      timer:close()
    end)
  end
  return w
end

--- The clients that serve `method` for `bufnr`, waiting (until `deadline`) for the
--- language servers that a freshly loaded buffer starts, or that are still initializing.
local function attached(bufnr, method, own_id, deadline, fresh, w)
  local clients = serving(bufnr, method, own_id)
  if #clients > 0 then
    return clients
  end
  local function starting()
    for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, _uninitialized = true })) do
      if client.name ~= "agentls" and not client.initialized then
        return true
      end
    end
    return false
  end
  if not fresh and not starting() then
    return clients
  end
  local group = vim.api.nvim_create_augroup("agentls.editor_lsp." .. vim.uv.hrtime(), { clear = true })
  vim.api.nvim_create_autocmd("LspAttach", {
    group = group,
    buffer = bufnr,
    callback = function()
      vim.schedule(w.poke)
    end,
  })
  while #clients == 0 and vim.uv.now() < deadline do
    w.sleep(fresh and not starting() and math.min(deadline, vim.uv.now() + 2000) or deadline)
    clients = serving(bufnr, method, own_id)
    if not w.woken and not starting() then
      break -- nothing started within a couple of seconds, and nothing is starting
    end
  end
  pcall(vim.api.nvim_del_augroup_by_id, group)
  return clients
end

-- The request ------------------------------------------------------------------------

local function convert_params(method, params, uri, from, to)
  local p = vim.deepcopy(params)
  if p.position and uri then
    p.position = converter(uri, from, to, {})(p.position)
  end
  if method == "textDocument/references" then
    p.context = p.context or { includeDeclaration = true }
  end
  return p
end

local function describe(method, uri)
  if uri then
    local ok, path = pcall(vim.uri_to_fname, uri)
    return method .. " on " .. vim.fn.fnamemodify(ok and path or uri, ":~:.")
  end
  return method
end

--- Asks every client in `clients`; their answers (converted, in client order) once all
--- answered or `deadline` passed, and the errors' messages.
local function ask(clients, method, params, uri, bufnr, own_encoding, deadline, w)
  local answers, errors, pending, ids = {}, {}, #clients, {}
  for i, client in ipairs(clients) do
    local encoding = client.offset_encoding or "utf-16"
    local handler = function(err, result)
      if ids[i] == false then
        return
      end
      ids[i] = false
      pending = pending - 1
      if err then
        table.insert(errors, client.name .. ": " .. (err.message or tostring(err)))
      else
        local ok, converted = pcall(convert_result, method, result, uri, encoding, own_encoding)
        answers[i] = ok and converted or result
      end
      vim.schedule(w.poke)
    end
    local ok, sent, id = pcall(require("agentls").call, client, "request", method, convert_params(method, params, uri, own_encoding, encoding), handler, bufnr)
    if ok and sent then
      ids[i] = ids[i] == nil and id or ids[i]
    elseif ids[i] == nil then
      ids[i] = false
      pending = pending - 1
      table.insert(errors, client.name .. ": the request could not be sent")
    end
  end
  while pending > 0 and vim.uv.now() < deadline do
    w.sleep(deadline)
  end
  for i, id in pairs(ids) do
    if id then
      pcall(require("agentls").call, clients[i], "cancel_request", id)
    end
  end
  local ordered = {}
  for i = 1, #clients do
    if answers[i] ~= nil then
      table.insert(ordered, answers[i])
    end
  end
  return ordered, errors, pending
end

--- The request's handler (Neovim runs it in a coroutine: it yields while waiting).
function M.on_request(_, params, ctx)
  params = params or {}
  local method = params.method
  if not METHODS[method] then
    return failure("agentls: unsupported method " .. tostring(method))
  end
  local request = type(params.params) == "table" and params.params or {}
  local own = ctx and ctx.client_id and vim.lsp.get_client_by_id(ctx.client_id)
  local own_id = own and own.id
  local own_encoding = own and own.offset_encoding or "utf-16"
  local deadline = vim.uv.now() + M.timeout_ms
  local w = waiter(coroutine.running())
  local uri = request.textDocument and request.textDocument.uri
  local bufnr, clients
  if method == "workspace/symbol" then
    clients = serving(nil, method, own_id)
  else
    if not uri then
      return failure("agentls: " .. method .. " without textDocument.uri")
    end
    local err, fresh
    bufnr, err, fresh = load(uri)
    if not bufnr then
      return failure(err)
    end
    clients = attached(bufnr, method, own_id, deadline, fresh, w)
  end
  if #clients == 0 then
    local ft = bufnr and vim.bo[bufnr].filetype or ""
    return failure(string.format("no language server in Neovim serves %s%s", describe(method, uri), ft ~= "" and (" (filetype " .. ft .. ")") or ""))
  end
  local answers, errors, pending = ask(clients, method, request, uri, bufnr, own_encoding, deadline, w)
  if #answers == 0 then
    if #errors > 0 then
      return failure("the editor's language servers failed: " .. table.concat(errors, "; "))
    end
    return failure(string.format("no language server answered %s within %d ms (%d asked)", describe(method, uri), M.timeout_ms, pending))
  end
  return { result = combine(method, answers) }
end

M._test = { to_byte = to_byte, from_byte = from_byte, convert_result = convert_result, combine = combine }

return M
