// OpenCode (npm `opencode-ai`, a native Bun binary) headless: `opencode run "task"` in the project
// directory; it exits once the model answers without a tool call.
//
// Configuration, the way a user has it: the README's recipe `recipes/opencode/opencode.json` is
// copied verbatim into the project (Stockade as the local MCP server `stockade`, every built-in
// tool switched off), and the command line is the recipe's `headless.sh`. The only test-only
// part is the model: a custom provider `scripted` on the bundled `@ai-sdk/openai-compatible`
// SDK (nothing is installed at run time) pointing at the scripted model, in the user's global
// config `~/.config/opencode/opencode.json`, which OpenCode deep-merges under the project's.
//
// The model sees Stockade's tools as `stockade_<tool>` (server name, "_", tool name), so they do
// not clash with the built-ins read/write/edit/grep/glob/bash; MCP tool calls need no
// permission in `run` (the build agent allows "*"). A tool result reaches the model as the text
// parts of the MCP CallToolResult joined by a blank line, in a `role: "tool"` message;
// structuredContent (used only when there is no content) and _meta are not shown to it, and
// isError leaves no mark on the wire (the text parts, joined by a newline, become the result).
// The recipe's `tool_output` lifts OpenCode's own cut (2000 lines / 51200 bytes, the rest saved
// to a file for its disabled Read/Grep) above Stockade's bounds (2000-line pages, 64 KB).
import fs from 'node:fs';
import path from 'node:path';


export default {
    name: 'opencode',
    wire: 'openai-chat',
    bin: 'opencode',
    // OpenCode 1.18.33's built-in tool ids (and a few of older versions), none of which may reach
    // the model.
    builtinTools: [
        'bash', 'read', 'write', 'edit', 'apply_patch', 'patch', 'multiedit', 'glob', 'grep', 'list',
        'lsp', 'skill', 'task', 'todowrite', 'todoread', 'webfetch', 'websearch', 'codesearch',
        'question', 'plan_exit', 'execute', 'invalid',
    ],

    async setup({ workspace, home, modelUrl, recipe, prompt }) {
        fs.copyFileSync(path.join(recipe, 'opencode.json'), path.join(workspace, 'opencode.json'));

        const globalDir = path.join(home, '.config', 'opencode');
        fs.mkdirSync(globalDir, { recursive: true });
        fs.writeFileSync(path.join(globalDir, 'opencode.json'), JSON.stringify({
            $schema: 'https://opencode.ai/config.json',
            provider: {
                scripted: {
                    npm: '@ai-sdk/openai-compatible',
                    name: 'Scripted model',
                    options: { baseURL: `${modelUrl}/v1`, apiKey: 'scripted-dummy-key' },
                    models: { 'scripted-model': { name: 'Scripted model', tool_call: true } },
                },
            },
            model: 'scripted/scripted-model',
            small_model: 'scripted/scripted-model',
        }, null, 2));

        return {
            argv: ['sh', path.join(recipe, 'headless.sh'), prompt],
            env: {
                // No network in the test: no models.dev catalogue (it would be fetched at start and
                // every hour), no update check, no LSP downloads, no session sharing.
                OPENCODE_DISABLE_MODELS_FETCH: '1',
                OPENCODE_DISABLE_AUTOUPDATE: '1',
                OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
                OPENCODE_DISABLE_SHARE: '1',
                // The bundled auth plugins (Copilot, Codex, GitLab...) serve providers we do not use.
                OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
                // Do not pick up skills or prompts from ~/.claude or ~/.agents.
                OPENCODE_DISABLE_CLAUDE_CODE: '1',
                OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
            },
            cwd: workspace,
        };
    },
};
