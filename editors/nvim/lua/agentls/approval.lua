-- What an approval shows while the user chooses. The pure part turns the tool call of an
-- agent/session/requestPermission into lines: the unified diff of an edit or a write, the
-- full command of a shell call. Where they go depends on the picker: Neovim's own
-- vim.ui.select is an input list in the message area that scrolls over every window, so
-- the lines go into its prompt; a picker of a plugin (dressing, snacks, telescope) leaves
-- the screen around it, so they go into a float beside it.

local M = {}

--- The lines that say what the call would do: the diff (without its trailing empty line),
--- the server's `details` lines (a workspace MCP server's whole entry), or the whole command
--- (every line of it) with its directory; {} when the title says it all.
function M.details(call)
  call = call or {}
  if type(call.diff) == "string" and call.diff ~= "" then
    local lines = vim.split(call.diff, "\n", { plain = true })
    if lines[#lines] == "" then
      table.remove(lines)
    end
    return lines
  end
  -- A workspace MCP server's whole entry (args, env, headers, trust, tools), as the server
  -- wrote it: its command alone would hide what else the entry asks for.
  if type(call.details) == "string" and call.details ~= "" then
    return vim.split(call.details, "\n", { plain = true })
  end
  local input = type(call.input) == "table" and call.input or {}
  if type(input.command) == "string" and input.command ~= "" then
    local lines = {}
    for i, line in ipairs(vim.split(input.command, "\n", { plain = true })) do
      table.insert(lines, (i == 1 and "$ " or "  ") .. line)
    end
    if type(input.cwd) == "string" and input.cwd ~= "" and input.cwd ~= "." and input.cwd ~= "./" then
      table.insert(lines, "  (in " .. input.cwd .. ")")
    end
    return lines
  end
  return {}
end

--- The question: "agentls: Edit src/lib.rs?", with the session when it is not the one shown.
function M.question(call, other_session)
  call = call or {}
  local session = other_session and (" [session " .. other_session .. "]") or ""
  return "agentls: " .. (call.title or call.name or "tool call") .. session .. "?"
end

--- The prompt for Neovim's own vim.ui.select: the question, then the details, one screen
--- line each (tabs as spaces, which the message area would show as ^I).
function M.inline_prompt(call, other_session)
  local lines = { M.question(call, other_session) }
  for _, line in ipairs(M.details(call)) do
    table.insert(lines, (line:gsub("\t", "    ")))
  end
  return table.concat(lines, "\n")
end

--- Whether `select` (default vim.ui.select) is Neovim's own, defined in runtime vim/ui.lua.
function M.is_stock_select(select)
  local info = debug.getinfo(select or vim.ui.select, "S")
  return info ~= nil and (info.source or ""):match("[/\\]vim[/\\]ui%.lua$") ~= nil
end

return M
