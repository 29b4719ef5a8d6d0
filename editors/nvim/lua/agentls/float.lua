--- A read-only float in the middle of the editor for a list of lines ("q" closes it): what
--- :AgentContext and :AgentMcp show.
local M = {}

--- Opens `lines` under `title`, focused; returns the buffer.
function M.open(lines, title)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.keymap.set("n", "q", "<cmd>close<cr>", { buffer = buf })
  local width = 0
  for _, line in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(line))
  end
  width = math.max(math.min(width + 1, vim.o.columns - 4), 1)
  vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = math.max(math.min(#lines, vim.o.lines - 4), 1),
    row = 2,
    col = math.max(math.floor((vim.o.columns - width) / 2), 0),
    border = "rounded",
    title = " " .. title .. " ",
  })
  return buf
end

return M
