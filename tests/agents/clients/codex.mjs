// OpenAI Codex CLI (npm @openai/codex, pinned in package.json), headless: `codex exec`.
//
// $HOME/.codex/config.toml is the README's recipe (recipes/codex/config.toml) byte for byte. What
// only the test needs lives apart, in the profile file $HOME/.codex/scripted.config.toml, layered
// on top with `-p scripted` (Codex 0.171: "-p NAME layers $CODEX_HOME/NAME.config.toml on top of
// the base user config"): the scripted model as a custom Responses-API provider on 127.0.0.1, and
// switches for the network calls Codex makes on its own (curated-plugin sync from GitHub and
// chatgpt.com, OpenTelemetry metrics to ab.chatgpt.com, update check). In the netns those calls
// fail anyway, but the plugin sync and the metrics flush cost ~5 s per run.
//
// The command line is recipes/codex/headless.sh itself, with `-p scripted --strict-config` and the
// prompt as its arguments; --strict-config makes a key this Codex version does not know an error.
//
// The model name is not in Codex's catalog ("Model metadata ... not found" warning), so Codex uses
// its fallback metadata: MCP tools are offered directly (not deferred behind tool_search, as for
// gpt-5.x) and apply_patch is not offered (for gpt-5.x it is, and the recipe's read-only sandbox
// refuses it).
import fs from 'node:fs';
import path from 'node:path';

const testOnly = (modelUrl) => `# Test only (tests/agents/clients/codex.mjs), layered on the recipe with \`codex exec -p scripted\`.
# The scripted model on 127.0.0.1:
model = "scripted-model"
model_provider = "scripted"
# No network calls of Codex's own (plugin sync, update check):
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false         # OpenTelemetry metrics to ab.chatgpt.com

[model_providers.scripted]
name = "Scripted model"
base_url = "${modelUrl}/v1"
wire_api = "responses"
env_key = "SCRIPTED_MODEL_API_KEY"
requires_openai_auth = false
request_max_retries = 0
stream_max_retries = 0
`;

export default {
    name: 'codex',
    wire: 'openai-responses',
    bin: 'codex',
    // Codex's own tools that the recipe must keep away from the model.
    builtinTools: [
        'shell', 'shell_command', 'local_shell', 'exec_command', 'write_stdin', 'apply_patch',
        'view_image', 'web_search', 'update_plan', 'request_user_input', 'js_repl', 'list_dir',
        'spawn_agent', 'get_goal', 'create_goal', 'update_goal', 'image_generation',
    ],

    async setup({ workspace, home, modelUrl, recipe, prompt }) {
        const codexHome = path.join(home, '.codex');
        fs.mkdirSync(codexHome, { recursive: true });
        fs.copyFileSync(path.join(recipe, 'config.toml'), path.join(codexHome, 'config.toml'));
        fs.writeFileSync(path.join(codexHome, 'scripted.config.toml'), testOnly(modelUrl));
        return {
            argv: ['sh', path.join(recipe, 'headless.sh'), '-p', 'scripted', '--strict-config', prompt],
            env: { SCRIPTED_MODEL_API_KEY: 'not-a-real-key', CODEX_HOME: codexHome },
            cwd: workspace,
        };
    },
};
