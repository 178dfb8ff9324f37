// The README's agent recipes and the files the agents suite runs are one source: every recipe
// under tests/agents/recipes/ appears in the README, verbatim, in the fenced block that follows
// its marker, and every marker names a recipe that exists:
//
//   <!-- recipe: codex/config.toml -->
//   ```toml
//   ...the file, byte for byte...
//   ```
//
//   node tests/agents/check_readme.mjs README.md           check (exit 1 and a diff on drift)
//   node tests/agents/check_readme.mjs README.md --write   rewrite the blocks from the files
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const recipes = path.join(here, 'recipes');
const [readmePath, mode] = process.argv.slice(2);
if (!readmePath) {
    console.error('usage: node check_readme.mjs README.md [--write]');
    process.exit(2);
}

function recipeFiles(dir, prefix = '') {
    return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const rel = prefix ? `${prefix}/${e.name}` : e.name;
        return e.isDirectory() ? recipeFiles(path.join(dir, e.name), rel) : [rel];
    }).sort();
}

const files = recipeFiles(recipes);
const readme = fs.readFileSync(readmePath, 'utf8');
// A marker, the opening fence on the next line, the body, the closing fence.
const block = /<!-- recipe: (\S+) -->\n(```[^\n]*)\n([\s\S]*?)```\n/g;
const problems = [];
const seen = new Set();
const rewritten = readme.replace(block, (whole, name, fence, body) => {
    seen.add(name);
    const file = path.join(recipes, name);
    if (!files.includes(name)) {
        problems.push(`README.md names the recipe "${name}", which is not in tests/agents/recipes/`);
        return whole;
    }
    const want = fs.readFileSync(file, 'utf8');
    if (body !== want) {
        problems.push(`README.md's block for ${name} differs from tests/agents/recipes/${name}:\n` +
            `--- README\n${body}--- file\n${want}`);
    }
    return `<!-- recipe: ${name} -->\n${fence}\n${want}\`\`\`\n`;
});
for (const name of files) {
    if (!seen.has(name)) problems.push(`tests/agents/recipes/${name} is not shown in README.md (add <!-- recipe: ${name} --> and a fenced block)`);
}

if (mode === '--write') {
    fs.writeFileSync(readmePath, rewritten);
    const left = problems.filter((p) => !p.includes('differs from'));
    for (const p of left) console.error(p);
    process.exit(left.length ? 1 : 0);
}
if (problems.length) {
    for (const p of problems) console.error(p);
    console.error(`\n${problems.length} problem(s). Edit the recipe file, then: node tests/agents/check_readme.mjs README.md --write`);
    process.exit(1);
}
console.log(`README.md shows all ${files.length} agent recipes verbatim`);
