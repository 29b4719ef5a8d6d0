-- Reviewing a turn's changes in Neovim (`:AgentReview [turnId]`): a review buffer lists the
-- files the chat session's last turn (or every turn since `turnId`) changed, one line per
-- file with its hunks' unified diff under it, from `agent/session/changes`. Keys undo the
-- hunk or the whole file under the cursor (`agent/session/revertChanges`); keeping is
-- doing nothing. After an undo the list is asked again (the server lists what is left) and
-- a conflict (lines you changed since the agent) is told with its reason, never
-- overwritten. `lines` is pure (tests/review_changes_spec.lua).

local M = {}

local ns = vim.api.nvim_create_namespace("agentls.review")

local function agentls()
  return require("agentls")
end

--- The keys of the review buffer, as the header shows them.
M.KEYS = {
  undo_hunk = { "u", "x" },
  undo_file = { "U", "X" },
  toggle = { "=", "<Tab>" },
  open = { "<CR>" },
  refresh = { "R" },
  close = { "q" },
}

M.HINT = "u/x undo hunk · U/X undo file · =/<Tab> fold · <CR> open · R refresh · q close · keep: leave it"

local STATUS = { added = "A", modified = "M", deleted = "D" }
local STATUS_HL = { added = "AgentlsReviewAdded", modified = "AgentlsReviewChanged", deleted = "AgentlsReviewRemoved" }

--- The highlight groups of the review buffer, linked by default (a colorscheme may set them).
function M.define_highlights()
  local links = {
    AgentlsReviewTitle = "Title",
    AgentlsReviewHint = "Comment",
    AgentlsReviewFile = "Directory",
    AgentlsReviewAdded = "Added",
    AgentlsReviewChanged = "Changed",
    AgentlsReviewRemoved = "Removed",
    AgentlsReviewHunk = "Special",
    AgentlsReviewChangedSince = "WarningMsg",
  }
  for group, target in pairs(links) do
    vim.api.nvim_set_hl(0, group, { link = target, default = true })
  end
end

--- A file's line: fold marker, status, path, hunk count, and `! changed since` when the
--- file is not what the turns left.
function M.file_line(file, folded)
  local n = #(file.hunks or {})
  local count = n == 0 and "whole file, not text" or string.format("%d hunk%s", n, n == 1 and "" or "s")
  local line = string.format("%s %s %s  (%s)", folded and "▸" or "▾", STATUS[file.status] or "?", file.path, count)
  if file.changedSince then
    line = line .. "  ! changed since"
  end
  return line
end

--- The lines of a hunk's diff (`@@` header first), without the trailing empty one.
local function diff_lines(hunk)
  local lines = vim.split(hunk.diff or "", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

--- The line of the file each diff line stands for (1-based, in the text the turns left):
--- context and added lines their own, a removed line the one now in its place.
local function targets(hunk, lines)
  local context = 0
  for i = 2, #lines do
    local sign = lines[i]:sub(1, 1)
    if sign == "+" or sign == "-" then
      break
    end
    if sign == " " then
      context = context + 1
    end
  end
  -- A range of 0 lines starts after the line `newStart` (a unified diff's rule).
  local line = (hunk.newLines > 0 and hunk.newStart or hunk.newStart + 1) - context
  local out = { math.max(hunk.newLines > 0 and hunk.newStart or hunk.newStart + 1, 1) }
  for i = 2, #lines do
    local sign = lines[i]:sub(1, 1)
    if sign == " " or sign == "+" then
      table.insert(out, math.max(line, 1))
      line = line + 1
    else
      table.insert(out, math.max(line, 1))
    end
  end
  return out
end

--- The review buffer for `files` (agent/session/changes's `files`): its lines, what each
--- line is (`items[row]` = {file = index, hunk = index?, line = the file's line}, 1-based
--- rows) and its highlights ({row (0-based), group}). `folded[path]` hides a file's hunks;
--- `title` names the turns.
function M.lines(files, folded, title)
  folded = folded or {}
  local lines = {
    string.format("agentls review: %s (%d file%s)", title or "the last turn", #files, #files == 1 and "" or "s"),
    M.HINT,
    "",
  }
  local items, highlights = {}, {
    { 0, "AgentlsReviewTitle" },
    { 1, "AgentlsReviewHint" },
  }
  if #files == 0 then
    table.insert(lines, "no change left to review")
    table.insert(highlights, { 3, "AgentlsReviewHint" })
  end
  for fi, file in ipairs(files) do
    table.insert(lines, M.file_line(file, folded[file.path]))
    local first = file.hunks and file.hunks[1]
    items[#lines] = { file = fi, line = first and math.max(first.newStart, 1) or 1 }
    table.insert(highlights, { #lines - 1, file.changedSince and "AgentlsReviewChangedSince" or STATUS_HL[file.status] or "AgentlsReviewFile" })
    if not folded[file.path] then
      for hi, hunk in ipairs(file.hunks or {}) do
        local body = diff_lines(hunk)
        local at = targets(hunk, body)
        for i, text in ipairs(body) do
          table.insert(lines, text)
          items[#lines] = { file = fi, hunk = hi, line = at[i] }
          local sign = text:sub(1, 1)
          local group = (i == 1 and "AgentlsReviewHunk")
            or (sign == "+" and "AgentlsReviewAdded")
            or (sign == "-" and "AgentlsReviewRemoved")
            or nil
          if group then
            table.insert(highlights, { #lines - 1, group })
          end
        end
      end
    end
  end
  return lines, items, highlights
end

--- The change to ask for the file or hunk of `item`: {path, hunkIds?}, or nil and why not.
function M.change_for(files, item, scope)
  if not item then
    return nil, "no file or hunk under the cursor"
  end
  local file = files[item.file]
  if scope == "file" then
    return { path = file.path }
  end
  local hunk = item.hunk and file.hunks[item.hunk]
  if not hunk and #(file.hunks or {}) == 1 then
    hunk = file.hunks[1]
  end
  if not hunk then
    if #(file.hunks or {}) == 0 then
      return nil, file.path .. " is not text: it has no hunks (U undoes it whole)"
    end
    return nil, "put the cursor on a hunk of " .. file.path .. " (U undoes the whole file)"
  end
  return { path = file.path, hunkIds = { hunk.id } }
end

--- What an undo's answer says: the message and its level.
function M.summary(result, change)
  local parts = {}
  if #(result.reverted or {}) > 0 then
    local what = change.hunkIds and "a hunk of " or ""
    table.insert(parts, "agentls: undone " .. what .. table.concat(result.reverted, ", "))
  end
  for _, conflict in ipairs(result.conflicts or {}) do
    table.insert(parts, "agentls: not undone: " .. conflict.path .. ": " .. conflict.reason)
  end
  local level = #(result.conflicts or {}) > 0 and vim.log.levels.WARN or vim.log.levels.INFO
  return table.concat(parts, "\n"), level
end

-- The review buffer: {buf, win, origin, session, since, files, items, folded}.
M.view = nil

local function valid_buf(buf)
  return buf and vim.api.nvim_buf_is_valid(buf)
end

local function render()
  local view = M.view
  local title = view.since and ("turn " .. view.since .. " and after") or "the last turn"
  local lines, items, highlights = M.lines(view.files, view.folded, title)
  view.items = items
  vim.bo[view.buf].modifiable = true
  vim.api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  vim.bo[view.buf].modified = false
  vim.api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  for _, hl in ipairs(highlights) do
    vim.api.nvim_buf_set_extmark(view.buf, ns, hl[1], 0, {
      end_row = hl[1],
      end_col = #lines[hl[1] + 1],
      hl_group = hl[2],
    })
  end
end

--- Asks the server for the changes again and redraws; false when it failed.
function M.refresh()
  local view = M.view
  if not view or not valid_buf(view.buf) then
    return false
  end
  local result, err = agentls().request("agent/session/changes", { sessionId = view.session, sinceTurnId = view.since })
  if err or not result then
    vim.notify("agentls: cannot list the changes: " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
    return false
  end
  view.files = result.files or {}
  local win = vim.fn.bufwinid(view.buf)
  local row = win ~= -1 and vim.api.nvim_win_get_cursor(win)[1] or nil
  render()
  if row and win ~= -1 then
    vim.api.nvim_win_set_cursor(win, { math.min(row, vim.api.nvim_buf_line_count(view.buf)), 0 })
  end
  return true
end

--- The absolute path of a listed path (relative to the workspace's first root, or to the
--- worktree of a session that works apart).
local function absolute(path)
  if path:sub(1, 1) == "/" then
    return path
  end
  local client = agentls().running_client()
  local worktree = require("agentls.worktree").of(M.view and M.view.session)
  local root = worktree and worktree.path or client and (client.root_dir or client.config.root_dir) or vim.fn.getcwd()
  return vim.fs.normalize(root .. "/" .. path)
end

local function loaded_buffer(file)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) == file then
      return buf
    end
  end
end

local function read(file)
  local f = io.open(file, "rb")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

--- After an undo the server wrote the file through the buffer (applyEdit) and to the disk:
--- a buffer that now holds what the disk holds is marked unmodified and its file time
--- taken again; the buffer of a file the undo removed (the agent had created it) goes.
function M.sync_buffers(paths)
  for _, path in ipairs(paths) do
    local file = absolute(path)
    local buf = loaded_buffer(file)
    if buf then
      local disk = read(file)
      if disk == nil then
        pcall(vim.api.nvim_buf_delete, buf, { force = true })
      else
        local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
        local text = ""
        if not (#lines == 1 and lines[1] == "") then
          text = table.concat(lines, "\n") .. ((vim.bo[buf].eol or vim.bo[buf].fixeol) and "\n" or "")
        end
        if text == disk then
          vim.bo[buf].modified = false
          vim.cmd("checktime " .. buf)
        end
      end
    end
  end
end

--- Undoes the hunk (`scope` "hunk") or the file ("file") under the cursor of the review.
function M.undo(scope)
  local view = M.view
  if not view then
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local change, why = M.change_for(view.files, view.items[row], scope)
  if not change then
    return vim.notify("agentls: " .. why, vim.log.levels.WARN)
  end
  local result, err = agentls().request(
    "agent/session/revertChanges",
    { sessionId = view.session, sinceTurnId = view.since, changes = { change } }
  )
  if err or not result then
    return vim.notify("agentls: undo failed: " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
  end
  M.sync_buffers(result.reverted or {})
  local message, level = M.summary(result, change)
  vim.notify(message, level)
  M.refresh()
end

--- Folds or unfolds the file under the cursor.
function M.toggle()
  local view = M.view
  local item = view and view.items[vim.api.nvim_win_get_cursor(0)[1]]
  if not item then
    return
  end
  local path = view.files[item.file].path
  view.folded[path] = not view.folded[path] or nil
  render()
  for row, it in pairs(view.items) do
    if it.file == item.file and not it.hunk then
      vim.api.nvim_win_set_cursor(0, { row, 0 })
    end
  end
end

--- Opens the file under the cursor at the hunk's line, in the window the review came from.
function M.open_at_cursor()
  local view = M.view
  local item = view and view.items[vim.api.nvim_win_get_cursor(0)[1]]
  if not item then
    return
  end
  local file = view.files[item.file]
  local path = absolute(file.path)
  if vim.fn.filereadable(path) == 0 and not loaded_buffer(path) then
    return vim.notify("agentls: " .. file.path .. " does not exist now", vim.log.levels.WARN)
  end
  if view.origin and vim.api.nvim_win_is_valid(view.origin) and view.origin ~= vim.fn.bufwinid(view.buf) then
    vim.api.nvim_set_current_win(view.origin)
  else
    vim.cmd("aboveleft split")
    view.origin = vim.api.nvim_get_current_win()
  end
  vim.cmd.edit(vim.fn.fnameescape(path))
  local last = vim.api.nvim_buf_line_count(0)
  vim.api.nvim_win_set_cursor(0, { math.min(item.line, last), 0 })
end

local function map_keys(buf)
  local actions = {
    undo_hunk = { function() M.undo("hunk") end, "undo the hunk under the cursor" },
    undo_file = { function() M.undo("file") end, "undo the whole file under the cursor" },
    toggle = { M.toggle, "fold or unfold the file" },
    open = { M.open_at_cursor, "open the file at this line" },
    refresh = { M.refresh, "list the changes again" },
    close = {
      function()
        vim.api.nvim_buf_delete(buf, { force = true })
      end,
      "close the review",
    },
  }
  for name, keys in pairs(M.KEYS) do
    for _, key in ipairs(keys) do
      vim.keymap.set("n", key, actions[name][1], { buffer = buf, nowait = true, desc = "agentls review: " .. actions[name][2] })
    end
  end
end

--- :AgentReview [turnId]: the review of the chat session's last turn (or of `since` and
--- every turn after it) in a split below. Returns the buffer.
function M.open(since)
  local session = agentls().state.session
  if not session then
    return vim.notify("agentls: no chat session yet: its turns' changes can be reviewed after one", vim.log.levels.WARN)
  end
  if since == "" then
    since = nil
  end
  M.define_highlights()
  local origin = vim.api.nvim_get_current_win()
  if M.view and valid_buf(M.view.buf) then
    M.view.session, M.view.since, M.view.folded = session, since, {}
  else
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, "agentls://review")
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].filetype = "agentls-review"
    vim.bo[buf].modifiable = false
    map_keys(buf)
    M.view = { buf = buf, session = session, since = since, files = {}, items = {}, folded = {} }
    vim.api.nvim_create_autocmd("BufWipeout", {
      buffer = buf,
      once = true,
      callback = function()
        M.view = nil
      end,
    })
  end
  local view = M.view
  if vim.bo[vim.api.nvim_get_current_buf()].filetype ~= "agentls-review" then
    view.origin = origin
  end
  if not M.refresh() then
    return
  end
  local win = vim.fn.bufwinid(view.buf)
  if win == -1 then
    vim.cmd("botright split")
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, view.buf)
    vim.api.nvim_win_set_height(win, math.max(math.floor(vim.o.lines * 0.4), 10))
    vim.wo[win].number = false
    vim.wo[win].relativenumber = false
    vim.wo[win].wrap = false
  end
  vim.api.nvim_set_current_win(win)
  -- On the first file.
  local rows = vim.tbl_keys(view.items)
  table.sort(rows)
  if rows[1] then
    vim.api.nvim_win_set_cursor(win, { rows[1], 0 })
  end
  return view.buf
end

--- Completion of :AgentReview: the turns of the chat's session that have a checkpoint.
function M.complete()
  local session = agentls().state.session
  if not session then
    return {}
  end
  local result = agentls().request("agent/session/checkpoints", { sessionId = session }, 5000)
  local turns = {}
  for _, c in ipairs(result and result.checkpoints or {}) do
    if c.turnId and not c.turnId:match("^undo%-") then
      table.insert(turns, c.turnId)
    end
  end
  return turns
end

return M
