-- Loaded at startup: only the statusline API and a setup hint; everything else waits for
-- require("agentls").setup().
if vim.g.loaded_agentls then
  return
end
vim.g.loaded_agentls = true
