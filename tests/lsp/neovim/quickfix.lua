-- Drives xla-lens from Neovim's built-in LSP client (0.7+), headless:
-- open a file, wait for diagnostics, apply the XLA101 quick fix on a given line,
-- wait for the re-published diagnostics, then write what happened as JSON.
local python = os.getenv("XLA_LENS_PY")
local file = os.getenv("XLA_LENS_FILE")
local out = os.getenv("XLA_LENS_OUT")
local fix_line = tonumber(os.getenv("XLA_LENS_FIX_LINE"))  -- 0-based

local result = { steps = {} }
local function finish(status)
  local fh = io.open(out, "w")
  fh:write(vim.fn.json_encode(result))
  fh:close()
  vim.cmd(status == 0 and "qa!" or ("cquit " .. status))
end

local function snapshot(bufnr)
  local items = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local lsp = (d.user_data or {}).lsp or {}
    table.insert(items, { lnum = d.lnum, col = d.col, end_col = d.end_col, code = lsp.code or d.code,
                          source = d.source, message = d.message })
  end
  return items
end

local function main()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = "xla-lens",
    cmd = { python, "-m", "xla_lens.lsp" },
    root_dir = vim.fn.fnamemodify(file, ":h"),
    init_options = { debounceMs = 20 },
    settings = { ["xla-lens"] = { target = "modern" } },
  })
  if not client_id then
    result.error = "start_client failed"
    return finish(2)
  end
  vim.lsp.buf_attach_client(bufnr, client_id)

  local got = vim.wait(30000, function() return #vim.diagnostic.get(bufnr) > 0 end, 50)
  result.before = snapshot(bufnr)
  if not got then
    result.error = "no diagnostics"
    return finish(3)
  end

  -- What :lua vim.lsp.buf.code_action() does in 0.7: the cursor's range plus the
  -- line's diagnostics in LSP form.
  local target
  for _, d in ipairs(vim.diagnostic.get(bufnr, { lnum = fix_line })) do
    local lsp = (d.user_data or {}).lsp
    if lsp and lsp.code == "XLA101" then target = d end
  end
  if not target then
    result.error = "no XLA101 diagnostic on line " .. fix_line
    return finish(4)
  end
  vim.api.nvim_win_set_cursor(0, { target.lnum + 1, target.col })
  local params = vim.lsp.util.make_range_params()
  params.context = {
    diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, fix_line),
    only = { "quickfix" },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 20000) or {}
  local action
  for _, resp in pairs(responses) do
    for _, a in ipairs(resp.result or {}) do
      table.insert(result.steps, a.title)
      if not action and a.title:find("(XLA101)", 1, true) and not a.title:find("Disable", 1, true) then
        action = a
      end
    end
  end
  if not action then
    result.error = "no quick fix offered"
    return finish(5)
  end
  local client = vim.lsp.get_client_by_id(client_id)
  if not action.edit then
    local resolved = client.request_sync("codeAction/resolve", action, 20000, bufnr)
    action = resolved and resolved.result or action
  end
  if not action.edit then
    result.error = "quick fix has no edit"
    return finish(6)
  end
  vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding or "utf-16")
  result.text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), "\n") .. "\n"

  local before = #result.before
  local republished = vim.wait(30000, function() return #vim.diagnostic.get(bufnr) == before - 1 end, 50)
  result.after = snapshot(bufnr)
  if not republished then
    result.error = "diagnostics were not re-published after the fix"
    return finish(7)
  end
  vim.lsp.stop_client(client_id)
  finish(0)
end

local ok, err = pcall(main)
if not ok then
  result.error = tostring(err)
  finish(9)
end
