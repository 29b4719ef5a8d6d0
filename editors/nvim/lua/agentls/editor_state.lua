-- The EditorState sent with a prompt: the buffer the user came from, the cursor, the
-- selection (from visual mode) and the buffer's diagnostics, all as LSP positions in the
-- client's position encoding.

local M = {}

--- LSP position of (0-based row, byte column) in `bufnr`.
local function position(bufnr, row, col, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  col = math.min(col, #line)
  local character
  if encoding == "utf-8" then
    character = col
  else
    local ok, index = pcall(vim.str_utfindex, line, encoding, col, false)
    if not ok then
      -- Neovim 0.10: str_utfindex(line, col) returns utf-32 and utf-16 indices.
      local utf32, utf16 = vim.str_utfindex(line, col)
      index = encoding == "utf-32" and utf32 or utf16
    end
    character = index
  end
  return { line = row, character = character }
end

--- The state of window `win` (default: the current one). `range` is {start_row, start_col,
--- end_row, end_col} (0-based, byte columns, end exclusive) for a selection.
function M.from_window(win, encoding, range)
  win = win or vim.api.nvim_get_current_win()
  local bufnr = vim.api.nvim_win_get_buf(win)
  local cursor = vim.api.nvim_win_get_cursor(win)
  local state = {
    uri = vim.uri_from_bufnr(bufnr),
    position = position(bufnr, cursor[1] - 1, cursor[2], encoding),
  }
  if range then
    state.selection = {
      start = position(bufnr, range[1], range[2], encoding),
      ["end"] = position(bufnr, range[3], range[4], encoding),
    }
  end
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(diagnostics, {
      range = {
        start = position(bufnr, d.lnum, d.col, encoding),
        ["end"] = position(bufnr, d.end_lnum or d.lnum, d.end_col or d.col, encoding),
      },
      severity = d.severity,
      message = d.message,
      source = d.source,
      code = d.code,
    })
  end
  if #diagnostics > 0 then
    state.diagnostics = diagnostics
  end
  return state
end

--- The last visual selection of `bufnr` as a range for `from_window` (linewise selections
--- cover whole lines).
function M.visual_range(bufnr)
  local s = vim.api.nvim_buf_get_mark(bufnr, "<")
  local e = vim.api.nvim_buf_get_mark(bufnr, ">")
  if s[1] == 0 or e[1] == 0 then
    return nil
  end
  local last = vim.api.nvim_buf_get_lines(bufnr, e[1] - 1, e[1], false)[1] or ""
  local end_col = math.min(e[2] + 1, #last)
  if vim.fn.visualmode() == "V" then
    return { s[1] - 1, 0, e[1] - 1, #last }
  end
  return { s[1] - 1, s[2], e[1] - 1, end_col }
end

return M
