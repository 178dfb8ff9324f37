#!/usr/bin/env python3
"""Runs the CI recipes of docs/ci.md as a runner would, and checks what they did.

    run_ci_recipes.py STOCKADE_BIN        (run_ci_recipes.sh sets up the network namespace and
                                           the caller; see there)

docs/ci.md holds two YAML blocks, each after a marker line: `<!-- ci-recipe: github -->` (a
GitHub Actions workflow) and `<!-- ci-recipe: gitlab -->` (a .gitlab-ci.yml). For each, this
parses the YAML and runs the shell of every step in order, in a throwaway directory holding a
small npm project (the checkout), with a fresh HOME:

  GitHub   each `run:` step by `bash --noprofile --norc -eo pipefail` (GitHub's `bash` shell),
           with the job's and the step's `env:`, in the workspace; after a failed step only the
           steps with `if: always()` run, as on GitHub.
  GitLab   every `script:` entry in one bash with `set -eo pipefail`, then every `after_script:`
           entry in another (GitLab runs both whatever happened), with the `variables:`.

The environment is what the runner gives (GitHub: CI, GITHUB_ACTIONS, GITHUB_WORKSPACE,
RUNNER_TEMP; GitLab: CI, GITLAB_CI, CI_PROJECT_DIR, CI_BUILDS_DIR, CI_JOB_TOKEN, ...), the
secrets the YAML takes from the CI secret store as fake values (ANTHROPIC_API_KEY, the job
tokens), and, for the test only, the scripted model as Claude Code's API (ANTHROPIC_BASE_URL on
127.0.0.1) with Claude Code's non-essential traffic switched off. PATH has neither `stockade`
nor `claude` until the steps that install them.

What is not run as it is written is listed below, and nothing else: GITHUB_SUBSTITUTIONS and
GITLAB_SUBSTITUTIONS (the steps that install Stockade and Claude Code, and the one that changes a
kernel setting), each with the lines the step must consist of (any other line fails the test, so
that nothing new hides in a substituted step), what the test does instead and why; and
GITHUB_ACTIONS (checkout: the test writes the project; upload-artifact: the test checks the files
its `path` matches). GitLab's own clone of the project is the test writing it, too. A step, an
action (`uses:`), a key or a `${{ }}` expression the test does not know fails the test. Not
evaluated: `runs-on` and GitLab's `image` (the steps run on this host, with its bash, coreutils
and Node), `rules`, `timeout`, `permissions`.

Then it checks: every step succeeded; the model was called with the secret's key and the task,
was offered none of Claude Code's own tools, and received the results it asked for (a file
written, no secret in the sandbox's environment, a host outside the allowlist refused); the file
is on disk and `stockade run -- npm test` passed on it; `stockade log`'s output shows the calls,
ci mode and the allowlist, and no secret; the artifact paths hold the event logs.

Exit 0: both recipes did all of it; 1: a problem, listed at the end; 77: this host cannot give
the caller isolation `full` or `namespaces` (`stockade doctor` fails), so no recipe can run.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DOC = os.path.join(REPO, 'docs', 'ci.md')
AGENTS = os.path.join(REPO, 'tests', 'agents')
CLI_BIN = os.path.join(AGENTS, 'node_modules', '.bin')
LOCK = os.path.join(AGENTS, 'package-lock.json')
MODEL = os.path.join(HERE, 'ci_model.mjs')

# The CI secret store and the tokens a runner hands a job: fake values. The model server checks
# that Claude Code called it with FAKE_ANTHROPIC_KEY.
FAKE_ANTHROPIC_KEY = 'sk-ant-fake-ci-secret-5b2e9c'
FAKE_GITHUB_TOKEN = 'ghs_fake-ci-token-77d1'
FAKE_GITLAB_JOB_TOKEN = 'glcbt-fake-ci-token-41a8'
# What the person starting the pipeline types as the task.
TASK = 'Write a note for CI in notes/ci.txt, then check that no secret is visible.'
# What the file-writing call writes (tests/ci/ci_model.mjs) and where.
NOTE_FILE = 'notes/ci.txt'

STEP_TIMEOUT_S = 150


class Problem(Exception):
    pass


# ---- the substitutions --------------------------------------------------------------------------

def claude_version_in_lock():
    with open(LOCK, encoding='utf-8') as f:
        lock = json.load(f)
    return lock['packages']['node_modules/@anthropic-ai/claude-code']['version']


class Job:
    """What the steps of one recipe share: paths, the extra PATH entries, the outputs."""

    def __init__(self, base, stockade_bin):
        self.base = base
        self.workspace = os.path.join(base, 'project')
        self.home = os.path.join(base, 'home')
        self.temp = os.path.join(base, 'runner-temp')
        self.builds = os.path.join(base, 'builds')
        self.stockade_dir = os.path.join(base, 'stockade-bin')
        self.stockade_bin = stockade_bin
        self.path_prepend = []       # directories "installed" so far, first = highest priority
        self.outputs = []            # (step name, exit status, output)
        self.checked_out = False
        self.artifacts = []          # paths the artifact steps would upload

    def install_stockade(self):
        # What `apt-get install ./stockade_*.deb` gives: `stockade` on PATH. The package's
        # binary is this build tree's (the packaging suite checks the .deb itself).
        os.makedirs(self.stockade_dir, exist_ok=True)
        link = os.path.join(self.stockade_dir, 'stockade')
        if not os.path.lexists(link):
            os.symlink(os.path.abspath(self.stockade_bin), link)
        if self.stockade_dir not in self.path_prepend:
            self.path_prepend.insert(0, self.stockade_dir)

    def install_claude(self, version):
        wanted = claude_version_in_lock()
        if version != wanted:
            raise Problem(f'docs/ci.md installs @anthropic-ai/claude-code@{version}, but the agents '
                          f'suite pins {wanted} (tests/agents/package-lock.json), which is what '
                          'this test runs: make them agree')
        if CLI_BIN not in self.path_prepend:
            self.path_prepend.append(CLI_BIN)

    def path(self, base_path):
        return ':'.join(self.path_prepend + [base_path])


class Substitution:
    def __init__(self, lines, does, why, action):
        self.lines = [re.compile(x) for x in lines]
        self.does = does
        self.why = why
        self.action = action  # action(job, matches): returns the shell to run in its place, or ''

    def apply(self, job, script):
        """Checks that `script` is made of these lines and nothing else; returns the action's
        replacement shell."""
        got = [ln.strip() for ln in script.splitlines() if ln.strip() and not ln.strip().startswith('#')]
        matches = []
        for ln in got:
            m = next((p.fullmatch(ln) for p in self.lines if p.fullmatch(ln)), None)
            if m is None:
                raise Problem(f'a line the test does not replace in a substituted step: {ln!r} '
                              f'(it knows: {[p.pattern for p in self.lines]})')
            matches.append(m)
        for p in self.lines:
            if not any(p.fullmatch(ln) for ln in got):
                raise Problem(f'the substituted step lacks its line {p.pattern!r}: update the test')
        return self.action(job, matches) or ''


def _install_claude(job, matches):
    job.install_claude(matches[0].group(1))


def _install_stockade(job, matches):
    job.install_stockade()


# GitHub: steps by name (`run:`) or by action (`uses:`, without its @version).
GITHUB_SUBSTITUTIONS = {
    'Let Stockade create user namespaces': Substitution(
        lines=[r'if \[ -e /proc/sys/kernel/apparmor_restrict_unprivileged_userns \]; then',
               r'sudo sysctl -w kernel\.apparmor_restrict_unprivileged_userns=0',
               r'fi'],
        does='the test runs nothing',
        why="it changes a kernel setting of the host, which a test must not do (on GitHub's VM, "
            'thrown away after the job, it is harmless); this host gives user namespaces as it is',
        action=lambda job, m: None),
    'Install Stockade': Substitution(
        lines=[r'gh release download "\$STOCKADE_RELEASE" --repo "\$STOCKADE_REPO" '
               r"--pattern 'stockade_\*_amd64\.deb' --dir \"\$RUNNER_TEMP\"",
               r'sudo apt-get update -qq',
               r'sudo apt-get install -y "\$RUNNER_TEMP"/stockade_\*_amd64\.deb'],
        does='the test puts the stockade binary of this build tree on PATH',
        why='no network, and no install into the host; the binary is what the package holds',
        action=_install_stockade),
    'Install Claude Code': Substitution(
        lines=[r'npm install -g @anthropic-ai/claude-code@(\S+)'],
        does='the test puts the agents suite\'s Claude Code (tests/agents/node_modules/.bin) on PATH, after '
             'checking that it is the version the step installs',
        why='no network, and no install into the host',
        action=_install_claude),
}


def _checkout(job, step):
    if step.get('with') != {'persist-credentials': False}:
        raise Problem(f'actions/checkout with {step.get("with")!r}: the test knows only '
                      "{'persist-credentials': False}")
    write_project(job.workspace)
    job.checked_out = True


def _upload_artifact(job, step, expand):
    w = {k: expand(v) for k, v in (step.get('with') or {}).items()}
    unknown = set(w) - {'name', 'path', 'if-no-files-found'}
    if unknown:
        raise Problem(f'actions/upload-artifact with keys the test does not know: {sorted(unknown)}')
    files = sorted(glob.glob(w['path']))
    if not files and w.get('if-no-files-found') == 'error':
        raise Problem(f'the artifact path {w["path"]} matches no file (if-no-files-found: error)')
    job.artifacts.extend(files)


GITHUB_ACTIONS = {
    'actions/checkout': ('the test writes the project into the workspace (what the checkout would fetch)',
                         'no repository to fetch from', _checkout),
    'actions/upload-artifact': ('the test checks that `path` matches files and keeps them for the checks',
                                'nowhere to upload to', _upload_artifact),
}

# GitLab: script entries by their text.
GITLAB_SUBSTITUTIONS = [
    Substitution(
        lines=[r'curl --fail --location --header "JOB-TOKEN: \$CI_JOB_TOKEN" --output /tmp/stockade\.deb '
               r'"\$CI_API_V4_URL/projects/\$CI_PROJECT_ID/packages/generic/stockade/\$STOCKADE_VERSION/'
               r'stockade_\$\{STOCKADE_VERSION\}_amd64\.deb"'],
        does='the test runs nothing (the next entry puts the binary on PATH)',
        why='no network: the package registry is not there',
        action=lambda job, m: None),
    Substitution(
        lines=[r'apt-get update -qq && apt-get install -y -qq /tmp/stockade\.deb'],
        does='the test puts the stockade binary of this build tree on PATH, for script and after_script',
        why='no network, and no install into the host; the binary is what the package holds',
        action=_install_stockade),
    Substitution(
        lines=[r'npm install -g @anthropic-ai/claude-code@(\S+)'],
        does="the test puts the agents suite's Claude Code on PATH (the version checked against its lock)",
        why='no network, and no install into the host',
        action=_install_claude),
]


# ---- the project the agent works on -----------------------------------------------------------

def write_project(workspace):
    """A small npm project: no dependencies (npm ci needs no network), and a test that passes
    once the agent has written its note."""
    files = {
        'package.json': json.dumps({
            'name': 'ci-demo', 'version': '1.0.0', 'private': True,
            'scripts': {'test': 'node test.js'},
        }, indent=2) + '\n',
        'package-lock.json': json.dumps({
            'name': 'ci-demo', 'version': '1.0.0', 'lockfileVersion': 3, 'requires': True,
            'packages': {'': {'name': 'ci-demo', 'version': '1.0.0'}},
        }, indent=2) + '\n',
        'test.js': ("const fs = require('fs');\n"
                    f"const note = fs.readFileSync('{NOTE_FILE}', 'utf8');\n"
                    "if (!note.trim()) throw new Error('the note is empty');\n"
                    "console.log('test passed: ' + note.trim());\n"),
        'README.md': '# ci-demo\n\nA project for the CI recipes test.\n',
    }
    for rel, text in files.items():
        p = os.path.join(workspace, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'w', encoding='utf-8') as f:
            f.write(text)


# ---- running steps ----------------------------------------------------------------------------

def base_path():
    """Standard directories, and node's (Claude Code's npm shims need it). Neither stockade nor
    claude may be found there: the test must know which one a step runs."""
    dirs = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']
    node = shutil.which('node')
    if node and os.path.dirname(node) not in dirs:
        dirs.append(os.path.dirname(node))
    path = ':'.join(dirs)
    for prog in ('stockade', 'claude'):
        found = shutil.which(prog, path=path)
        if found:
            raise Problem(f'{found} is installed on this host: the steps could run it instead of '
                          'the one the test puts on PATH')
    return path


def test_env(job, model_url):
    return {
        'PATH': base_path(),
        'HOME': job.home,
        'LANG': 'C.UTF-8',
        'TERM': 'dumb',
        'NO_COLOR': '1',
        'TMPDIR': job.temp,
        # Test only: the scripted model as the API, and no other traffic of Claude Code's.
        'ANTHROPIC_BASE_URL': model_url,
        'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC': '1',
        'DISABLE_AUTOUPDATER': '1',
        'DISABLE_TELEMETRY': '1',
        'DISABLE_ERROR_REPORTING': '1',
        'CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY': '1',
    }


def run_shell(job, name, script, env, shell_args):
    """Runs one step's shell; returns its exit status. Its output goes to ours, prefixed."""
    fd, path = tempfile.mkstemp(prefix='step-', suffix='.sh', dir=job.temp)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        f.write(script)
    print(f'\n=== {name}', flush=True)
    started = time.monotonic()
    proc = subprocess.Popen(['bash', '--noprofile', '--norc', *shell_args, path], cwd=job.workspace,
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=STEP_TIMEOUT_S)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        status = 124
        out += f'\n[the step ran past {STEP_TIMEOUT_S} s and was killed]\n'.encode()
    try:
        os.killpg(proc.pid, 9)  # whatever the step left running (none expected)
    except ProcessLookupError:
        pass
    text = out.decode('utf-8', 'replace')
    for line in text.splitlines():
        print(f'  | {line}')
    print(f'=== {name}: exit {status} in {time.monotonic() - started:.1f} s', flush=True)
    job.outputs.append((name, status, text))
    return status


# ---- GitHub Actions ---------------------------------------------------------------------------

GITHUB_TOP_KEYS = {'name', True, 'permissions', 'jobs'}  # `on:` is True to YAML 1.1
GITHUB_JOB_KEYS = {'runs-on', 'timeout-minutes', 'env', 'steps', 'permissions'}
GITHUB_STEP_KEYS = {'name', 'run', 'env', 'if', 'uses', 'with'}


def github_expander(job):
    context = {
        'runner.temp': job.temp,
        'github.token': FAKE_GITHUB_TOKEN,
        'secrets.ANTHROPIC_API_KEY': FAKE_ANTHROPIC_KEY,
        'inputs.task': TASK,
    }

    def expand(value):
        if not isinstance(value, str):
            return value if isinstance(value, bool) else str(value)

        def one(m):
            expr = m.group(1).strip()
            if expr not in context:
                raise Problem(f'an expression the test does not know: ${{{{ {expr} }}}} '
                              f'(it knows {sorted(context)})')
            return context[expr]
        return re.sub(r'\$\{\{(.*?)\}\}', one, value)
    return expand


def run_github(doc, job, model_url):
    unknown = set(doc) - GITHUB_TOP_KEYS
    if unknown:
        raise Problem(f'workflow keys the test does not know: {sorted(unknown, key=str)}')
    if list(doc['jobs']) != ['agent']:
        raise Problem(f'the workflow must have one job, agent; it has {list(doc["jobs"])}')
    spec = doc['jobs']['agent']
    unknown = set(spec) - GITHUB_JOB_KEYS
    if unknown:
        raise Problem(f'job keys the test does not know: {sorted(unknown)}')
    expand = github_expander(job)
    job_env = {k: expand(v) for k, v in (spec.get('env') or {}).items()}
    failed = []
    for i, step in enumerate(spec['steps']):
        unknown = set(step) - GITHUB_STEP_KEYS
        if unknown:
            raise Problem(f'step {i + 1}: keys the test does not know: {sorted(unknown)}')
        name = step.get('name') or step.get('uses') or f'step {i + 1}'
        cond = step.get('if')
        if cond not in (None, 'always()'):
            raise Problem(f'{name}: an if: the test does not know: {cond!r}')
        if failed and cond != 'always()':
            print(f'\n=== {name}: skipped (an earlier step failed)')
            continue
        if 'uses' in step:
            action = step['uses'].split('@')[0]
            if action not in GITHUB_ACTIONS or 'run' in step:
                raise Problem(f'{name}: an action the test does not know: {step["uses"]}')
            does, why, fn = GITHUB_ACTIONS[action]
            print(f'\n=== {name}: substituted: {does} ({why})')
            try:
                if action == 'actions/upload-artifact':
                    fn(job, step, expand)
                else:
                    fn(job, step)
            except Problem as e:
                print(f'  | {e}')
                job.outputs.append((name, 1, str(e)))
                failed.append(name)
            continue
        if 'run' not in step:
            raise Problem(f'{name}: neither run: nor uses:')
        if not job.checked_out:
            raise Problem(f'{name}: a run step before actions/checkout')
        script = expand(step['run'])
        if name in GITHUB_SUBSTITUTIONS:
            sub = GITHUB_SUBSTITUTIONS[name]
            print(f'\n=== {name}: substituted: {sub.does} ({sub.why})')
            sub.apply(job, script)
            continue
        env = test_env(job, model_url)
        env.update({'CI': 'true', 'GITHUB_ACTIONS': 'true', 'GITHUB_WORKSPACE': job.workspace,
                    'RUNNER_TEMP': job.temp})
        env.update(job_env)
        env.update({k: expand(v) for k, v in (step.get('env') or {}).items()})
        env['PATH'] = job.path(env['PATH'])
        if run_shell(job, name, script, env, ['-eo', 'pipefail']) != 0:
            failed.append(name)
    return failed


# ---- GitLab CI --------------------------------------------------------------------------------

GITLAB_GLOBAL_KEYS = {'variables', 'default', 'include', 'stages', 'workflow'}
GITLAB_JOB_KEYS = {'image', 'rules', 'timeout', 'variables', 'script', 'after_script', 'artifacts'}


def gitlab_variables(doc, spec, job):
    # Predefined variables a runner sets, and the pipeline's: the task typed into the form and
    # the project's masked CI/CD variable (the secret).
    env = {
        'CI': 'true', 'GITLAB_CI': 'true', 'CI_PROJECT_DIR': job.workspace,
        'CI_BUILDS_DIR': job.builds, 'CI_JOB_TOKEN': FAKE_GITLAB_JOB_TOKEN,
        'CI_API_V4_URL': 'https://gitlab.invalid/api/v4', 'CI_PROJECT_ID': '1',
        'CI_PIPELINE_SOURCE': 'web', 'CI_JOB_ID': '4242',
    }
    known_inputs = {'TASK': TASK}
    secrets = {'ANTHROPIC_API_KEY': FAKE_ANTHROPIC_KEY}

    def expand(value):
        def one(m):
            name = m.group(1) or m.group(2)
            if name not in env:
                raise Problem(f'a variable reference the test does not know: ${name}')
            return env[name]
        return re.sub(r'\$\{(\w+)\}|\$(\w+)', one, str(value))

    for scope in ((doc.get('variables') or {}), (spec.get('variables') or {})):
        for name, value in scope.items():
            if isinstance(value, dict):
                if set(value) - {'value', 'description'}:
                    raise Problem(f'variable {name}: keys the test does not know: {sorted(value)}')
                value = value.get('value', '')
            env[name] = expand(value)
    for name, value in known_inputs.items():
        if name not in env:
            raise Problem(f'the pipeline variable {name} is not declared')
        env[name] = value
    env.update(secrets)
    return env


def run_gitlab(doc, job, model_url):
    jobs = [k for k in doc if k not in GITLAB_GLOBAL_KEYS]
    for k in doc:
        if k in GITLAB_GLOBAL_KEYS and k != 'variables':
            raise Problem(f'a global keyword the test does not know: {k}')
    if jobs != ['agent']:
        raise Problem(f'the pipeline must have one job, agent; it has {jobs}')
    spec = doc['agent']
    unknown = set(spec) - GITLAB_JOB_KEYS
    if unknown:
        raise Problem(f'job keys the test does not know: {sorted(unknown)}')
    # The runner clones the project into CI_PROJECT_DIR before the script.
    write_project(job.workspace)
    job.checked_out = True
    variables = gitlab_variables(doc, spec, job)

    lines = []
    for entry in spec['script']:
        sub = next((s for s in GITLAB_SUBSTITUTIONS
                    if any(p.fullmatch(entry.strip()) for p in s.lines)), None)
        if sub is None:
            lines.append(entry)
            continue
        print(f'\n=== script: {entry}\n=== substituted: {sub.does} ({sub.why})')
        before = list(job.path_prepend)
        sub.apply(job, entry)
        added = [d for d in job.path_prepend if d not in before]
        lines.append(f'# substituted by the test: {entry}')
        if added:
            lines.append(f'export PATH="{":".join(added)}:$PATH"')
    # Every entry of the job's shell, as the runner gives it: one bash, stopping at a failure.
    env = test_env(job, model_url)
    env.update(variables)
    failed = []
    if run_shell(job, 'script', '\n'.join(lines) + '\n', env, ['-eo', 'pipefail']) != 0:
        failed.append('script')
    # after_script: a new shell, whatever script did; what script installed is still installed.
    env = test_env(job, model_url)
    env.update(variables)
    env['PATH'] = job.path(env['PATH'])
    after = '\n'.join(spec.get('after_script') or []) + '\n'
    status = run_shell(job, 'after_script', after, env, ['-eo', 'pipefail'])
    if status != 0:
        # GitLab does not fail the job for it, but here every entry is expected to succeed.
        failed.append('after_script')
    artifacts = spec.get('artifacts') or {}
    if set(artifacts) - {'when', 'paths'} or artifacts.get('when') != 'always':
        raise Problem(f'artifacts the test does not know: {artifacts!r}')
    for p in artifacts['paths']:
        job.artifacts.extend(sorted(glob.glob(os.path.join(job.workspace, p, '**', '*'), recursive=True)))
    return failed


# ---- the checks -------------------------------------------------------------------------------

def check(job, recipe, failed, report):
    problems = []
    for name in failed:
        problems.append(f'the step "{name}" failed')
    problems.extend(report['problems'])
    note = os.path.join(job.workspace, NOTE_FILE)
    if not os.path.isfile(note):
        problems.append(f'{NOTE_FILE} is not in the workspace')
    elif report['note'] not in open(note, encoding='utf-8').read():
        problems.append(f'{NOTE_FILE} does not hold what the agent wrote')
    output = '\n'.join(text for _, _, text in job.outputs)
    # stockade log's timeline, as the job printed it.
    for want in ('policy workspace-write, ci mode', 'network allowlist', '#1 bash mkdir -p notes',
                 'network refused example.com:443', 'session ended'):
        if want not in output:
            problems.append(f'the job\'s output lacks "{want}" (stockade log\'s timeline)')
    if 'test passed: ' + report['note'] not in output:
        problems.append("`stockade run -- npm test` did not pass on the agent's note")
    for secret in (FAKE_ANTHROPIC_KEY, FAKE_GITHUB_TOKEN, FAKE_GITLAB_JOB_TOKEN):
        if secret in output:
            problems.append(f'a secret ({secret[:12]}…) is in the job\'s output')
    events = [a for a in job.artifacts if os.path.basename(a) == 'events.jsonl']
    if not events:
        problems.append(f'the artifact holds no events.jsonl (it has {job.artifacts})')
    logged = ''
    for e in events:
        with open(e, encoding='utf-8') as f:
            logged += ''.join(json.dumps(json.loads(ln)) + '\n' for ln in f if ln.strip())
    if events and 'mkdir -p notes' not in logged:
        problems.append(f'the artifact\'s event logs lack the file-writing call ({events})')
    if FAKE_ANTHROPIC_KEY in logged:
        problems.append('the API key is in the artifact\'s event logs')
    return [f'{recipe}: {p}' for p in problems]


# ---- main -------------------------------------------------------------------------------------

def recipes():
    text = open(DOC, encoding='utf-8').read()
    marked = re.findall(r'<!-- ci-recipe: (\S+) -->\n```yaml\n(.*?)\n```\n', text, re.S)
    blocks = re.findall(r'^```ya?ml$', text, re.M)
    if len(blocks) != len(marked):
        raise Problem(f'docs/ci.md has {len(blocks)} YAML blocks, {len(marked)} of them marked '
                      '`<!-- ci-recipe: NAME -->`: every one must be, so that none goes untested')
    names = [n for n, _ in marked]
    if sorted(names) != ['github', 'gitlab']:
        raise Problem(f'docs/ci.md marks the recipes {names}; the test runs github and gitlab, once each')
    parsed = []
    for n, body in marked:
        try:
            parsed.append((n, yaml.safe_load(body)))
        except yaml.YAMLError as e:
            raise Problem(f'docs/ci.md: the {n} recipe is not valid YAML: {e}') from e
    return parsed


def start_model(job):
    report = os.path.join(job.base, 'model-report.json')
    env = {'PATH': base_path(), 'HOME': job.home, 'FAKE_SECRET': FAKE_ANTHROPIC_KEY,
           'EXPECTED_TASK': TASK}
    proc = subprocess.Popen(['node', MODEL, report], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env, cwd=job.base)
    line = proc.stdout.readline().decode()
    if not line:
        raise Problem('the scripted model did not start (tests/ci/ci_model.mjs)')
    return proc, json.loads(line)['url'], report


def stop_model(proc, report_path):
    proc.stdin.close()
    proc.wait(timeout=30)
    with open(report_path, encoding='utf-8') as f:
        return json.load(f)


def run_recipe(name, doc, stockade_bin):
    base = os.path.realpath(tempfile.mkdtemp(prefix=f'stockade-ci-{name}-'))
    job = Job(base, stockade_bin)
    for d in (job.workspace, job.home, job.temp, job.builds):
        os.makedirs(d)
    model, url, report_path = start_model(job)
    try:
        failed = (run_github if name == 'github' else run_gitlab)(doc, job, url)
    except Problem as e:
        print(f'(kept {base})')
        raise e
    finally:
        report = stop_model(model, report_path)
    report['note'] = report.get('note') or ''
    print(f'\n{name}: the model got {report["requests"]} requests; steps: '
          + '; '.join(f'{s["name"]} → {s["called"]}' for s in report['steps']))
    problems = check(job, name, failed, report)
    if problems or os.environ.get('CI_RECIPES_KEEP') == '1':
        print(f'(kept {base})')
    else:
        shutil.rmtree(base, ignore_errors=True)
    return problems


def main():
    if len(sys.argv) != 2:
        print('usage: run_ci_recipes.py STOCKADE_BIN', file=sys.stderr)
        return 2
    stockade_bin = sys.argv[1]
    # The recipes' `stockade doctor` step fails on a host that cannot give isolation `full` or
    # `namespaces`, as it would on an unprepared runner: that is this host's lack, not the recipes'.
    with tempfile.TemporaryDirectory(prefix='stockade-ci-doctor-') as d:
        doctor = subprocess.run([stockade_bin, 'doctor'], cwd=d, env={'PATH': '/usr/bin:/bin', 'HOME': d},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if doctor.returncode != 0:
        why = ([ln for ln in doctor.stdout.splitlines() if ln.startswith('isolation')]
               or doctor.stdout.splitlines()[-5:] or [f'(stockade doctor exited {doctor.returncode})'])
        print('SKIP: this host gives no isolation full or namespaces to this caller, which the '
              'recipes need (--network allowlist):\n' + '\n'.join(why))
        return 77
    problems = []
    started = time.monotonic()
    try:
        for name, doc in recipes():
            try:
                problems += run_recipe(name, doc, stockade_bin)
            except Problem as e:
                problems.append(f'{name}: {e}')
    except Problem as e:
        problems.append(str(e))
    took = time.monotonic() - started
    if problems:
        print(f'\n{len(problems)} problem(s) after {took:.1f} s:\n- ' + '\n- '.join(problems))
        return 1
    print(f'\nok: both recipes of docs/ci.md ran, in {took:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
