-- agent/editor/diagnostics: after the agent changed files, the server asks for what this
-- editor's language servers say about them. For each uri: its buffer (when there is one)
-- and vim.diagnostic.get(bufnr) in LSP's shape, answered once every loaded buffer asked for
-- had its next DiagnosticChanged, or settleMs passed, whichever is first. A buffer whose
-- diagnostics already changed since its text last did (a fast language server reported
-- before the request came), or that nothing reports on, is not waited for.

local M = {}

--- Buffer -> its changedtick when its diagnostics last changed.
local reported = {}

--- Remembers when each buffer's diagnostics change (from the first agentls client on).
function M.track()
  local group = vim.api.nvim_create_augroup("agentls.diagnostics", { clear = true })
  vim.api.nvim_create_autocmd("DiagnosticChanged", {
    group = group,
    callback = function(args)
      if vim.api.nvim_buf_is_valid(args.buf) then
        reported[args.buf] = vim.api.nvim_buf_get_changedtick(args.buf)
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    callback = function(args)
      reported[args.buf] = nil
    end,
  })
end

--- Whether a report on the buffer's new text is worth waiting for: its diagnostics did not
--- change since its text last did, and something reports on it (they changed before, or a
--- language server other than agentls is attached). A buffer nothing reports on is
--- answered at once rather than after settleMs.
local function worth_waiting(bufnr)
  local tick = reported[bufnr]
  if tick ~= nil then
    return tick ~= vim.api.nvim_buf_get_changedtick(bufnr)
  end
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    if client.name ~= "agentls" then
      return true
    end
  end
  return false
end

--- A vim.diagnostic item as an LSP Diagnostic (0-based lines and columns; Neovim's
--- severities are LSP's numbers).
function M.to_lsp(d)
  local range = {
    start = { line = d.lnum, character = d.col or 0 },
    ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col or 0 },
  }
  return { range = range, severity = d.severity, message = d.message, source = d.source, code = d.code }
end

local function buffer_of(uri)
  local ok, path = pcall(vim.uri_to_fname, uri)
  if not ok then
    return nil
  end
  local bufnr = vim.fn.bufnr(path)
  return bufnr ~= -1 and bufnr or nil
end

--- The answer now: {items = [{uri, version, diagnostics}]} for the uris that have a buffer.
function M.collect(uris)
  local items = {}
  for _, uri in ipairs(uris or {}) do
    local bufnr = buffer_of(uri)
    if bufnr then
      local version = vim.lsp.util.buf_versions[bufnr]
      if version == nil and vim.api.nvim_buf_is_loaded(bufnr) then
        version = vim.api.nvim_buf_get_changedtick(bufnr)
      end
      table.insert(items, {
        uri = uri,
        version = version,
        diagnostics = vim.tbl_map(M.to_lsp, vim.diagnostic.get(bufnr)),
      })
    end
  end
  return { items = items }
end

--- The request's handler: waits (yielding when run in a coroutine, as Neovim runs server
--- requests) for the loaded buffers' next DiagnosticChanged or settleMs, then answers.
function M.on_request(_, params)
  params = params or {}
  local uris = params.uris or {}
  local settle = math.max(tonumber(params.settleMs) or 1500, 0)
  local waiting, group = {}, vim.api.nvim_create_augroup("agentls.diagnostics." .. vim.uv.hrtime(), { clear = true })
  local pending = 0
  local done = false
  local co = coroutine.running()
  local function finish()
    if done then
      return
    end
    done = true
    pcall(vim.api.nvim_del_augroup_by_id, group)
    if co and coroutine.status(co) == "suspended" then
      coroutine.resume(co)
    end
  end
  for _, uri in ipairs(uris) do
    local bufnr = buffer_of(uri)
    if bufnr and vim.api.nvim_buf_is_loaded(bufnr) and not waiting[bufnr] and worth_waiting(bufnr) then
      waiting[bufnr] = true
      pending = pending + 1
      vim.api.nvim_create_autocmd("DiagnosticChanged", {
        group = group,
        buffer = bufnr,
        once = true,
        callback = function()
          pending = pending - 1
          if pending == 0 then
            vim.schedule(finish)
          end
        end,
      })
    end
  end
  if pending > 0 and settle > 0 then
    vim.defer_fn(finish, settle)
    if co then
      coroutine.yield()
    else
      vim.wait(settle + 100, function()
        return done
      end, 10)
    end
  end
  done = true
  pcall(vim.api.nvim_del_augroup_by_id, group)
  return M.collect(uris)
end

return M
