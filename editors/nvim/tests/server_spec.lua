-- Which server the plugin starts: `cmd` from setup(), else the one built in the plugin's own
-- checkout, else `agentls` on PATH; :checkhealth says how to build one when none runs.
local h = require("helpers")

test("the server is the one built in the plugin's checkout unless cmd is set", function()
  local agentls = require("agentls")
  agentls.setup({})
  local checkout = agentls.checkout()
  h.assert_eq(vim.fn.filereadable(checkout .. "/server/Cargo.toml"), 1, "the checkout: " .. checkout)
  local cmd, found = agentls.server_cmd()
  -- The tier's server is this checkout's build (./test builds target/debug/agentls) unless
  -- CARGO_TARGET_DIR put it elsewhere.
  local bin = vim.fn.resolve(vim.fn.fnamemodify(os.getenv("AGENTLS_BIN"), ":p"))
  if vim.startswith(bin, checkout .. "/target/") then
    h.assert_eq(found, "built in this plugin's checkout")
    assert(vim.startswith(cmd[1], checkout .. "/target/"), cmd[1])
    assert(vim.fn.executable(cmd[1]) == 1, cmd[1])
  else
    assert(found == "PATH" or found == "built in this plugin's checkout", found)
  end
  local advice = agentls.how_to_build("agentls")
  assert(advice:find("cd " .. checkout .. " && cargo build --release -p agentls", 1, true), advice)
  agentls.setup({ cmd = { "/opt/agentls/bin/agentls" } })
  local chosen, why = agentls.server_cmd()
  h.assert_eq(chosen, { "/opt/agentls/bin/agentls" })
  h.assert_eq(why, "setup({ cmd })")
  agentls.setup({})
end)
