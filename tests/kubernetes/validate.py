#!/usr/bin/env python3
"""Checks packaging/kubernetes: what kustomize renders from it is what the API server would take,
and the pod it describes is the one docs/kubernetes.md promises.

    validate.py [--check manifests|apparmor] [REPOSITORY]

manifests (the default):
  1. Renders the base with `kubectl kustomize packaging/kubernetes` (kubectl from $KUBECTL or
     PATH: Debian 12's kubernetes-client is kubectl 1.20 with kustomize v2.0.3, the oldest the
     base must render with), and an overlay of the kind docs/kubernetes.md describes
     (namespace, image, admin Secret) made in a temporary directory.
  2. Validates every object, and packaging/kubernetes/examples/*.yaml:
     - agent-sandbox's kinds against the openAPIV3Schema of the version they name in the
       vendored CRDs (tests/kubernetes/vendor/agent-sandbox), their metadata against ObjectMeta;
     - core kinds (ServiceAccount, Secret, ConfigMap, NetworkPolicy) against the vendored
       Kubernetes v1.36 definitions (tests/kubernetes/vendor/kubernetes), $refs resolved;
     - the pod template inside the SandboxTemplate against core v1 PodTemplateSpec as well.
     Unknown fields are errors, as with `kubectl apply --validate=strict`: a misspelled field
     must not be pruned in silence.
  3. Asserts the settings the design requires: hostUsers false, procMount Unmasked, seccomp and
     AppArmor Localhost profiles, every capability dropped, no privilege escalation, a
     read-only root, non-root uid/gid 1000, no service account token, the probes on endpoints
     runner/mcp/http_server.cc serves, the args, the volumes, a NetworkPolicy that selects the
     pods, and more (see check_pod and check_base).
  4. Shows that it bites: broken copies of the rendered objects (a misspelled field, a wrong
     type, a value outside an enum, a malformed quantity, a missing required field) must be
     rejected by the schemas, pods without the required settings must fail the assertions, and
     a broken copy of the base's YAML must fail end to end through kustomize.
apparmor:
  Parses packaging/kubernetes/apparmor/stockade-nested with `apparmor_parser -Q -K` (no kernel
  needed), and a broken copy of it, which must fail.

Exit 0: all passed; 1: a problem, each listed; 77: skipped, with the reason (no kubectl, no
python3-yaml or python3-jsonschema; no apparmor_parser, or one that cannot run here).
"""

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
VENDOR = os.path.join(HERE, 'vendor')

try:
    import yaml
except ImportError:
    print('SKIP: python3-yaml is not installed (debian-packages.txt)')
    sys.exit(SKIP)
try:
    import jsonschema
except ImportError:
    print('SKIP: python3-jsonschema is not installed (debian-packages.txt)')
    sys.exit(SKIP)

# What the design requires of the pod (docs/kubernetes.md, "The pod").
PORT = 8888
SECCOMP = {'type': 'Localhost', 'localhostProfile': 'profiles/stockade-nested.json'}
APPARMOR = {'type': 'Localhost', 'localhostProfile': 'stockade-nested'}
COMMAND = ['stockade']
ARGS = ['serve', '--http', f'0.0.0.0:{PORT}', '--state-dir', '/var/lib/stockade', '--pod',
        '--admin-token-file', '/etc/stockade/admin/token-sha256',
        '--bind-file', '/etc/stockade/bind/tenant.json',
        '--pod-idle-ttl', '30m', '--drain', '20']
EMPTY_DIRS = {'/workspace', '/var/lib/stockade', '/tmp'}
SECRET_MOUNTS = {'/etc/stockade/admin': 'stockade-admin', '/etc/stockade/bind': 'stockade-bind'}
# The calls Stockade makes to build a sandbox, which the node's seccomp profile must allow
# whatever the container's capabilities (packaging/kubernetes/seccomp-stockade-nested.json).
NESTED_SYSCALLS = ['clone', 'clone3', 'unshare', 'mount', 'umount2', 'pivot_root', 'open_tree',
                   'move_mount', 'fsopen', 'fsmount', 'fsconfig', 'mount_setattr', 'sethostname']
# Kubernetes' quantity grammar (io.k8s.apimachinery.pkg.api.resource.Quantity's description; the
# same pattern the CRDs carry).
QUANTITY = (r'^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|'
            r'([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$')
CORE_KINDS = {
    ('v1', 'ServiceAccount'): 'io.k8s.api.core.v1.ServiceAccount',
    ('v1', 'Secret'): 'io.k8s.api.core.v1.Secret',
    ('v1', 'ConfigMap'): 'io.k8s.api.core.v1.ConfigMap',
    ('networking.k8s.io/v1', 'NetworkPolicy'): 'io.k8s.api.networking.v1.NetworkPolicy',
}


class Problems:
    def __init__(self):
        self.items = []
        self.passed = 0

    def check(self, ok, what):
        """Records what as a problem unless ok; returns ok."""
        if not ok:
            self.items.append(what)
        return bool(ok)

    def ok(self, what):
        self.passed += 1
        print(f'ok: {what}')


# ---- schemas ---------------------------------------------------------------------------------

def strict(node):
    """The schema with unknown fields refused: additionalProperties false on every object schema
    that lists properties and says nothing of additional ones (nor preserves unknown fields)."""
    if isinstance(node, list):
        return [strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: strict(value) for key, value in node.items()}
    if ('properties' in out and 'additionalProperties' not in out
            and not out.get('x-kubernetes-preserve-unknown-fields')):
        out['additionalProperties'] = False
    return out


def load_core_definitions():
    with open(os.path.join(VENDOR, 'kubernetes', 'definitions.json')) as f:
        definitions = json.load(f)['definitions']
    definitions = {name: strict(schema) for name, schema in definitions.items()}
    # OpenAPI v2 writes these two as strings; the API server takes the forms below.
    definitions['io.k8s.apimachinery.pkg.util.intstr.IntOrString'] = {
        'anyOf': [{'type': 'integer'}, {'type': 'string'}]}
    definitions['io.k8s.apimachinery.pkg.api.resource.Quantity'] = {
        'anyOf': [{'type': 'number'}, {'type': 'string', 'pattern': QUANTITY}]}
    return definitions


def core_validator(definitions, name):
    return jsonschema.Draft4Validator(
        {'$ref': f'#/definitions/{name}', 'definitions': definitions})


def load_crds():
    """{(apiVersion, kind): strict openAPIV3Schema} for every version the CRDs serve."""
    out = {}
    folder = os.path.join(VENDOR, 'agent-sandbox')
    for name in sorted(os.listdir(folder)):
        if not name.endswith('.yaml'):
            continue
        with open(os.path.join(folder, name)) as f:
            crd = yaml.safe_load(f)
        group = crd['spec']['group']
        kind = crd['spec']['names']['kind']
        for version in crd['spec']['versions']:
            if version.get('served'):
                out[(f"{group}/{version['name']}", kind)] = strict(
                    version['schema']['openAPIV3Schema'])
    return out


class Validators:
    def __init__(self):
        self.definitions = load_core_definitions()
        self.core = {key: core_validator(self.definitions, name)
                     for key, name in CORE_KINDS.items()}
        self.object_meta = core_validator(self.definitions,
                                          'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta')
        self.pod_template = core_validator(self.definitions,
                                           'io.k8s.api.core.v1.PodTemplateSpec')
        self.crds = {key: jsonschema.Draft4Validator(schema)
                     for key, schema in load_crds().items()}

    def errors(self, obj):
        """Every schema error of obj, as 'path: message' lines, each naming the schema."""
        key = (obj.get('apiVersion'), obj.get('kind'))
        found = []

        def collect(validator, value, schema_name, prefix):
            for error in sorted(validator.iter_errors(value), key=lambda e: list(e.path)):
                path = prefix + ''.join(
                    f'[{p}]' if isinstance(p, int) else f'.{p}' for p in error.absolute_path)
                found.append(f'{schema_name}: {path or "."}: {error.message}')

        if key in self.core:
            collect(self.core[key], obj, f'core {key[0]} {key[1]}', '')
        elif key in self.crds:
            collect(self.crds[key], obj, f'CRD {key[0]} {key[1]}', '')
            collect(self.object_meta, obj.get('metadata', {}), 'core ObjectMeta', '.metadata')
            if key[1] == 'SandboxTemplate':
                template = (obj.get('spec') or {}).get('podTemplate')
                if template is not None:
                    collect(self.pod_template, template, 'core v1 PodTemplateSpec',
                            '.spec.podTemplate')
        else:
            found.append(f'{key[0]} {key[1]}: no vendored schema for this kind')
        return found


# ---- rendering -------------------------------------------------------------------------------

def kustomize(kubectl, directory):
    run = subprocess.run([kubectl, 'kustomize', directory], capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr.strip()
    return [doc for doc in yaml.safe_load_all(run.stdout) if doc], None


OVERLAY = """\
bases:
  - ../base
namespace: agents
images:
  - name: stockade
    newName: registry.example.com/stockade
    newTag: "1.2.3"
generatorOptions:
  disableNameSuffixHash: true
secretGenerator:
  - name: stockade-admin
    behavior: replace
    files:
      - token-sha256
"""


def render_overlay(kubectl, base, tmp):
    """An overlay as docs/kubernetes.md describes one. kustomize v2.0.3 takes a base only by a
    relative path inside the tree it loads from, so the base is a link beside the overlay."""
    os.symlink(os.path.abspath(base), os.path.join(tmp, 'base'))
    overlay = os.path.join(tmp, 'overlay')
    os.mkdir(overlay)
    with open(os.path.join(overlay, 'kustomization.yaml'), 'w') as f:
        f.write(OVERLAY)
    with open(os.path.join(overlay, 'token-sha256'), 'w') as f:
        f.write('0' * 64 + '\n')
    return kustomize(kubectl, overlay)


def find(objects, kind, name=None):
    return [o for o in objects
            if o.get('kind') == kind and (name is None or o['metadata'].get('name') == name)]


# ---- the pod and the base --------------------------------------------------------------------

def check_pod(template, label):
    """The settings the design requires of the pod template. Returns a list of what is wrong."""
    bad = []
    spec = template.get('spec') or {}
    labels = (template.get('metadata') or {}).get('labels') or {}

    def want(ok, what):
        if not ok:
            bad.append(f'{label}: {what}')

    want(spec.get('hostUsers') is False, 'spec.hostUsers must be false')
    want(spec.get('automountServiceAccountToken') is False,
         'spec.automountServiceAccountToken must be false')
    for key in ('hostNetwork', 'hostPID', 'hostIPC'):
        want(not spec.get(key), f'spec.{key} must not be set')
    want(spec.get('restartPolicy') == 'Never', 'spec.restartPolicy must be Never')
    want(spec.get('terminationGracePeriodSeconds') == 30,
         'spec.terminationGracePeriodSeconds must be 30')
    psc = spec.get('securityContext') or {}
    want(psc.get('runAsNonRoot') is True, 'pod securityContext.runAsNonRoot must be true')
    want(psc.get('runAsUser') == 1000, 'pod securityContext.runAsUser must be 1000')
    want(psc.get('runAsGroup') == 1000, 'pod securityContext.runAsGroup must be 1000')
    want(psc.get('seccompProfile') == SECCOMP,
         f'pod securityContext.seccompProfile must be {SECCOMP}')
    want(psc.get('appArmorProfile') == APPARMOR,
         f'pod securityContext.appArmorProfile must be {APPARMOR}')
    volumes = {v.get('name'): v for v in spec.get('volumes') or []}
    want(not any('hostPath' in v for v in volumes.values()), 'no hostPath volume')

    containers = spec.get('containers') or []
    want(len(containers) == 1, 'exactly one container')
    for c in containers + (spec.get('initContainers') or []):
        name = f"container {c.get('name')}"
        sc = c.get('securityContext') or {}
        want(sc.get('procMount') == 'Unmasked',
             f'{name}: securityContext.procMount must be Unmasked')
        want(sc.get('allowPrivilegeEscalation') is False,
             f'{name}: securityContext.allowPrivilegeEscalation must be false')
        want(sc.get('readOnlyRootFilesystem') is True,
             f'{name}: securityContext.readOnlyRootFilesystem must be true')
        want(not sc.get('privileged'), f'{name}: must not be privileged')
        caps = sc.get('capabilities') or {}
        want(caps.get('drop') == ['ALL'], f'{name}: capabilities.drop must be [ALL]')
        want(not caps.get('add'), f'{name}: must add no capability')
        want(sc.get('runAsNonRoot', psc.get('runAsNonRoot')) is True,
             f'{name}: must run as non-root')
        # A container may repeat the pod's profiles, never loosen them.
        want(sc.get('seccompProfile', SECCOMP) == SECCOMP,
             f'{name}: securityContext.seccompProfile must not differ from the pod\'s')
        want(sc.get('appArmorProfile', APPARMOR) == APPARMOR,
             f'{name}: securityContext.appArmorProfile must not differ from the pod\'s')
        res = c.get('resources') or {}
        for kind in ('requests', 'limits'):
            for what in ('cpu', 'memory'):
                want(what in (res.get(kind) or {}), f'{name}: resources.{kind}.{what} must be set')

    if not containers:
        return bad
    c = containers[0]
    # The command line whole: the image's ENTRYPOINT is not relied on (packaging/oci/build.sh).
    want(c.get('command') == COMMAND, f'container command must be {COMMAND}')
    want(c.get('args') == ARGS, f'container args must be {ARGS}, not {c.get("args")}')
    want(any(p.get('containerPort') == PORT for p in c.get('ports') or []),
         f'container port {PORT}')
    probes = {'readinessProbe': '/readyz', 'livenessProbe': '/healthz'}
    for probe, path in probes.items():
        get = (c.get(probe) or {}).get('httpGet') or {}
        want(get.get('path') == path and get.get('port') in (PORT, 'http'),
             f'{probe} must be GET {path} on {PORT}')
    drain = int(ARGS[ARGS.index('--drain') + 1])
    want(drain < (spec.get('terminationGracePeriodSeconds') or 0),
         '--drain must end before terminationGracePeriodSeconds')
    mounts = {m.get('mountPath'): m for m in c.get('volumeMounts') or []}
    for path in sorted(EMPTY_DIRS):
        volume = volumes.get((mounts.get(path) or {}).get('name'), {})
        want('emptyDir' in volume, f'{path} must be an emptyDir volume')
    for path, secret in SECRET_MOUNTS.items():
        mount = mounts.get(path) or {}
        volume = volumes.get(mount.get('name'), {})
        want((volume.get('secret') or {}).get('secretName') == secret and
             mount.get('readOnly') is True, f'{path} must be Secret {secret}, mounted read-only')
    bind = volumes.get((mounts.get('/etc/stockade/bind') or {}).get('name'), {})
    want((bind.get('secret') or {}).get('optional') is True,
         'the bind Secret must be optional (a warm pod starts unbound)')
    for flag, directory in (('--admin-token-file', '/etc/stockade/admin/'),
                            ('--bind-file', '/etc/stockade/bind/')):
        want(ARGS[ARGS.index(flag) + 1].startswith(directory), f'{flag} inside {directory}')
    want(labels.get('app.kubernetes.io/name') == 'stockade', 'pod label app.kubernetes.io/name')
    return bad


def check_base(objects, label, image):
    """The objects of the base, together. Returns a list of what is wrong."""
    bad = []

    def want(ok, what):
        if not ok:
            bad.append(f'{label}: {what}')

    templates = find(objects, 'SandboxTemplate', 'stockade')
    if not templates:
        return [f'{label}: no SandboxTemplate "stockade"']
    template = templates[0]
    spec = template['spec']
    pod = spec['podTemplate']
    bad += check_pod(pod, f'{label}: SandboxTemplate stockade')
    want(spec.get('networkPolicyManagement') == 'Unmanaged',
         'SandboxTemplate.spec.networkPolicyManagement must be Unmanaged (the base has its own)')
    want(spec.get('envVarsInjectionPolicy') == 'Disallowed',
         'SandboxTemplate.spec.envVarsInjectionPolicy must be Disallowed')
    containers = pod['spec'].get('containers') or [{}]
    want(containers[0].get('image') == image,
         f'image must be {image}, not {containers[0].get("image")}')

    pools = find(objects, 'SandboxWarmPool')
    want(len(pools) == 1 and pools[0]['spec']['sandboxTemplateRef']['name'] == 'stockade',
         'one SandboxWarmPool, of template stockade')
    want(not find(objects, 'SandboxClaim'), 'no SandboxClaim (applying the base takes no pod)')
    accounts = find(objects, 'ServiceAccount', pod['spec'].get('serviceAccountName'))
    want(len(accounts) == 1 and accounts[0].get('automountServiceAccountToken') is False,
         'the pods\' ServiceAccount is in the base, with automountServiceAccountToken false')
    want(len(find(objects, 'Secret', 'stockade-admin')) == 1, 'the admin Secret is in the base')
    want(not find(objects, 'Secret', 'stockade-bind'),
         'no bind Secret in the base: every pod of the pool would be bound to it')

    policies = find(objects, 'NetworkPolicy')
    want(len(policies) == 1, 'one NetworkPolicy')
    if policies:
        np = policies[0]['spec']
        pod_labels = pod.get('metadata', {}).get('labels') or {}
        selector = np.get('podSelector', {}).get('matchLabels') or {}
        want(selector and all(pod_labels.get(k) == v for k, v in selector.items())
             and not np.get('podSelector', {}).get('matchExpressions'),
             'the NetworkPolicy selects the pods by their labels')
        want(sorted(np.get('policyTypes') or []) == ['Egress', 'Ingress'],
             'the NetworkPolicy governs Ingress and Egress')
        ingress_ports = {(p.get('protocol'), p.get('port'))
                         for rule in np.get('ingress') or [] for p in rule.get('ports') or []}
        want(ingress_ports == {('TCP', PORT)}, f'ingress only to TCP {PORT}, not {ingress_ports}')
        want(all(rule.get('from') for rule in np.get('ingress') or []),
             'every ingress rule names where from')
        egress_ports = {(p.get('protocol'), p.get('port'))
                        for rule in np.get('egress') or [] for p in rule.get('ports') or []}
        want(all(rule.get('ports') for rule in np.get('egress') or []),
             'every egress rule names its ports')
        want(egress_ports <= {('UDP', 53), ('TCP', 53), ('TCP', 443), ('TCP', 80)},
             f'egress only to DNS, 443 and 80, not {egress_ports}')
    return bad


def check_seccomp_profile(repo):
    """The node profile the template names is in the repository and lets Stockade build its
    sandboxes whatever the container's capabilities."""
    path = os.path.join(repo, 'packaging', 'kubernetes', 'seccomp-stockade-nested.json')
    if not os.path.exists(path):
        return [f'{path}: missing (the template names its node copy, '
                'profiles/stockade-nested.json)']
    try:
        with open(path) as f:
            profile = json.load(f)
    except ValueError as e:
        return [f'{path}: not JSON: {e}']
    allowed = set()
    for rule in profile.get('syscalls') or []:
        conditional = ((rule.get('includes') or {}).get('caps')
                       or (rule.get('excludes') or {}).get('caps'))
        if rule.get('action') == 'SCMP_ACT_ALLOW' and not rule.get('args') and not conditional:
            allowed.update(rule.get('names') or [])
    missing = [name for name in NESTED_SYSCALLS if name not in allowed]
    bad = []
    if 'defaultAction' not in profile:
        bad.append(f'{path}: no defaultAction')
    if missing:
        bad.append(f'{path}: does not allow {missing} unconditionally')
    return bad


# ---- the negative checks ---------------------------------------------------------------------

DELETE = object()


def set_in(obj, path, value):
    """A copy of obj with the field at path (keys and list indexes) set, or removed when value is
    DELETE."""
    out = copy.deepcopy(obj)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


CONTAINER = ['spec', 'podTemplate', 'spec', 'containers', 0]


def rename(obj, path, old, new):
    out = copy.deepcopy(obj)
    node = out
    for key in path:
        node = node[key]
    node[new] = node.pop(old)
    return out


def negative_schema_cases(objects):
    """(what, broken object, schemas that must reject it) for the rendered base."""
    template = find(objects, 'SandboxTemplate', 'stockade')[0]
    pool = find(objects, 'SandboxWarmPool')[0]
    policy = find(objects, 'NetworkPolicy')[0]
    account = find(objects, 'ServiceAccount')[0]
    both = ('CRD', 'core v1 PodTemplateSpec')
    return [
        ('a misspelled field under the container securityContext (readOnlyRootFileSystem)',
         rename(template, CONTAINER + ['securityContext'], 'readOnlyRootFilesystem',
                'readOnlyRootFileSystem'), both),
        ('a misspelled field under the pod securityContext (runAsNonroot)',
         rename(template, ['spec', 'podTemplate', 'spec', 'securityContext'], 'runAsNonRoot',
                'runAsNonroot'), both),
        ('a misspelled pod field (hostUser)',
         rename(template, ['spec', 'podTemplate', 'spec'], 'hostUsers', 'hostUser'), both),
        ('a wrong type: runAsUser "1000", a string',
         set_in(template, ['spec', 'podTemplate', 'spec', 'securityContext', 'runAsUser'], '1000'),
         both),
        ('a wrong type: hostUsers "false", a string',
         set_in(template, ['spec', 'podTemplate', 'spec', 'hostUsers'], 'false'), both),
        ('a value outside an enum: procMount "Unmask" (the CRD has no enum here; core does)',
         set_in(template, CONTAINER + ['securityContext', 'procMount'], 'Unmask'),
         ('core v1 PodTemplateSpec',)),
        ('a value outside an enum: seccompProfile type "localhost"',
         set_in(template, ['spec', 'podTemplate', 'spec', 'securityContext', 'seccompProfile',
                           'type'], 'localhost'), ('core v1 PodTemplateSpec',)),
        ('a malformed quantity: memory limit "4GB"',
         set_in(template, CONTAINER + ['resources', 'limits', 'memory'], '4GB'), both),
        ('capabilities.drop a string, not a list',
         set_in(template, CONTAINER + ['securityContext', 'capabilities', 'drop'], 'ALL'), both),
        ('a container without its required name',
         set_in(template, CONTAINER + ['name'], DELETE), both),
        ('a field the SandboxTemplate does not have (spec.podTemplates)',
         rename(template, ['spec'], 'podTemplate', 'podTemplates'), ('CRD',)),
        ('networkPolicyManagement outside its enum ("Off")',
         set_in(template, ['spec', 'networkPolicyManagement'], 'Off'), ('CRD',)),
        ('a SandboxWarmPool with replicas -1',
         set_in(pool, ['spec', 'replicas'], -1), ('CRD',)),
        ('a SandboxWarmPool without its required sandboxTemplateRef',
         set_in(pool, ['spec', 'sandboxTemplateRef'], DELETE), ('CRD',)),
        ('a misspelled NetworkPolicy field (policyType)',
         rename(policy, ['spec'], 'policyTypes', 'policyType'), ('core',)),
        ('NetworkPolicy policyTypes a string, not a list',
         set_in(policy, ['spec', 'policyTypes'], 'Ingress'), ('core',)),
        ('a ServiceAccount with automountServiceAccountToken "no"',
         set_in(account, ['automountServiceAccountToken'], 'no'), ('core',)),
        ('a label value that is not a string (metadata.labels: {a: 1})',
         set_in(template, ['metadata', 'labels'], {'a': 1}), ('core ObjectMeta',)),
    ]


def negative_pod_cases(objects):
    """(what, broken pod template) that check_pod must refuse."""
    pod = find(objects, 'SandboxTemplate', 'stockade')[0]['spec']['podTemplate']
    sc = ['spec', 'securityContext']
    csc = ['spec', 'containers', 0, 'securityContext']
    return [
        ('hostUsers removed', set_in(pod, ['spec', 'hostUsers'], DELETE)),
        ('procMount Default', set_in(pod, csc + ['procMount'], 'Default')),
        ('seccomp RuntimeDefault',
         set_in(pod, sc + ['seccompProfile'], {'type': 'RuntimeDefault'})),
        ('a container seccompProfile Unconfined',
         set_in(pod, csc + ['seccompProfile'], {'type': 'Unconfined'})),
        ('AppArmor removed', set_in(pod, sc + ['appArmorProfile'], DELETE)),
        ('capabilities.drop [NET_RAW]', set_in(pod, csc + ['capabilities', 'drop'], ['NET_RAW'])),
        ('a capability added', set_in(pod, csc + ['capabilities', 'add'], ['SYS_ADMIN'])),
        ('readOnlyRootFilesystem false', set_in(pod, csc + ['readOnlyRootFilesystem'], False)),
        ('allowPrivilegeEscalation removed',
         set_in(pod, csc + ['allowPrivilegeEscalation'], DELETE)),
        ('runAsNonRoot false', set_in(pod, sc + ['runAsNonRoot'], False)),
        ('automountServiceAccountToken true',
         set_in(pod, ['spec', 'automountServiceAccountToken'], True)),
        ('liveness probe on /livez',
         set_in(pod, ['spec', 'containers', 0, 'livenessProbe', 'httpGet', 'path'], '/livez')),
    ]


def check_broken_copy(kubectl, base, validators, tmp, problems):
    """A copy of the base's YAML with one field misspelled must fail end to end: kustomize
    renders it, and the schemas and the assertions refuse it."""
    copy_dir = os.path.join(tmp, 'broken')
    shutil.copytree(base, copy_dir, symlinks=True)
    path = os.path.join(copy_dir, 'sandboxtemplate.yaml')
    with open(path) as f:
        text = f.read()
    broken = text.replace('readOnlyRootFilesystem: true', 'readOnlyRootFileSystem: true')
    if broken == text:
        return ['broken copy: sandboxtemplate.yaml has no "readOnlyRootFilesystem: true" to break']
    with open(path, 'w') as f:
        f.write(broken)
    objects, error = kustomize(kubectl, copy_dir)
    if objects is None:
        return [f'broken copy: kustomize failed instead of rendering it: {error}']
    template = find(objects, 'SandboxTemplate', 'stockade')[0]
    errors = validators.errors(template)
    bad = []
    for schema in ('CRD', 'core v1 PodTemplateSpec'):
        hits = [e for e in errors if e.startswith(schema) and 'readOnlyRootFileSystem' in e]
        if hits:
            problems.ok('negative: a broken copy of sandboxtemplate.yaml, rendered, is rejected '
                        f'by {hits[0]}')
        else:
            bad.append(f'broken copy: {schema} accepted readOnlyRootFileSystem')
    found = check_pod(template['spec']['podTemplate'], 'broken copy')
    if not any('readOnlyRootFilesystem' in p for p in found):
        bad.append('broken copy: the assertions did not miss readOnlyRootFilesystem')
    return bad


# ---- main ------------------------------------------------------------------------------------

def run_manifests(repo, problems):
    kubectl = shutil.which(os.environ.get('KUBECTL') or 'kubectl')
    if not kubectl:
        print('SKIP: kubectl not found: install Debian\'s kubernetes-client (debian-packages.txt) '
              'or set KUBECTL')
        return SKIP
    version = subprocess.run([kubectl, 'version', '--client', '--short'], capture_output=True,
                             text=True)
    if version.returncode != 0:
        version = subprocess.run([kubectl, 'version', '--client'], capture_output=True, text=True)
    print(f'kubectl: {kubectl}: {(version.stdout or version.stderr).strip().splitlines()[0]}')

    base = os.path.join(repo, 'packaging', 'kubernetes')
    validators = Validators()
    print(f'schemas: {len(validators.crds)} CRD versions, '
          f'{len(validators.definitions)} Kubernetes definitions')

    rendered, error = kustomize(kubectl, base)
    if not problems.check(rendered is not None, f'kubectl kustomize {base}: {error}'):
        return 1
    problems.ok(f'kubectl kustomize packaging/kubernetes rendered {len(rendered)} objects: '
                + ', '.join(f"{o['kind']}/{o['metadata']['name']}" for o in rendered))

    with tempfile.TemporaryDirectory() as tmp:
        overlay, error = render_overlay(kubectl, base, tmp)
        if problems.check(overlay is not None, f'the overlay did not render: {error}'):
            problems.ok('an overlay (namespace, images, admin Secret replaced) rendered')
            namespaces = {o['metadata'].get('namespace') for o in overlay}
            problems.check(namespaces == {'agents'}, f'overlay: namespaces {namespaces}')
            secret = find(overlay, 'Secret', 'stockade-admin')
            problems.check(len(secret) == 1 and 'stringData' not in secret[0]
                           and 'token-sha256' in secret[0].get('data', {}),
                           'overlay: the admin Secret was not replaced')

        examples_dir = os.path.join(base, 'examples')
        examples = []
        for name in sorted(os.listdir(examples_dir)) if os.path.isdir(examples_dir) else []:
            if name.endswith('.yaml'):
                with open(os.path.join(examples_dir, name)) as f:
                    examples += [(f'examples/{name}', d) for d in yaml.safe_load_all(f) if d]

        sets = [('base', rendered), ('overlay', overlay or [])]
        for label, objects in sets + [('example', [d for _, d in examples])]:
            for obj in objects:
                errors = validators.errors(obj)
                what = (f"{label}: {obj.get('apiVersion')} "
                        f"{obj.get('kind')}/{obj['metadata'].get('name')}")
                if problems.check(not errors, f'{what}: ' + '; '.join(errors)):
                    problems.ok(f'{what} is valid')

        for label, objects, image in (
                ('base', rendered, 'stockade:VERSION'),
                ('overlay', overlay or [], 'registry.example.com/stockade:1.2.3')):
            bad = check_base(objects, label, image)
            for item in bad:
                problems.check(False, item)
            if not bad:
                problems.ok(f'{label}: the pod and the objects around it are as the design '
                            'requires')

        for name, claim in examples:
            if claim.get('kind') == 'SandboxClaim':
                ref = claim['spec']['warmPoolRef']['name']
                problems.check(bool(find(rendered, 'SandboxWarmPool', ref)),
                               f'{name}: claims from warm pool "{ref}", which the base lacks')

        bad = check_seccomp_profile(repo)
        for item in bad:
            problems.check(False, item)
        if not bad:
            problems.ok('packaging/kubernetes/seccomp-stockade-nested.json allows the nested calls')

        # The endpoints the probes use are the ones the HTTP front end serves.
        with open(os.path.join(repo, 'runner', 'mcp', 'http_server.cc')) as f:
            server = f.read()
        for path in ('/readyz', '/healthz'):
            if problems.check(f'"{path}"' in server,
                              f'runner/mcp/http_server.cc serves no {path}, which a probe uses'):
                problems.ok(f'runner/mcp/http_server.cc serves {path}')

        # It bites.
        for what, broken, schemas in negative_schema_cases(rendered):
            errors = validators.errors(broken)
            for schema in schemas:
                hits = [e for e in errors if e.startswith(schema)]
                if problems.check(bool(hits), f'negative check: {schema} accepted {what}'):
                    problems.ok(f'negative: {what}: {hits[0]}')
        for what, pod in negative_pod_cases(rendered):
            found = check_pod(pod, 'broken')
            if problems.check(bool(found), f'negative check: the assertions accepted {what}'):
                problems.ok(f'negative: {what}: {found[0]}')
        for item in check_broken_copy(kubectl, base, validators, tmp, problems):
            problems.check(False, item)
    return 0


def run_apparmor(repo, problems):
    parser = shutil.which('apparmor_parser') or (
        '/usr/sbin/apparmor_parser' if os.path.exists('/usr/sbin/apparmor_parser') else None)
    if not parser:
        print('SKIP: apparmor_parser not found: install Debian\'s apparmor (debian-packages.txt)')
        return SKIP
    profile = os.path.join(repo, 'packaging', 'kubernetes', 'apparmor', 'stockade-nested')
    # -Q: no kernel load, -K: no cache; -S: write the compiled policy to stdout (compiled, not
    # just read: the rules are turned into the kernel's tables).
    def parse(path):
        return subprocess.run([parser, '-Q', '-K', '-S', path], capture_output=True)

    run = parse(profile)
    stderr = run.stderr.decode(errors='replace')
    if run.returncode != 0 and 'parser error' not in stderr.lower():
        print(f'SKIP: apparmor_parser cannot run here: {stderr.strip()}')
        return SKIP
    if problems.check(run.returncode == 0 and run.stdout,
                      f'apparmor_parser refused {profile}: {stderr.strip()}'):
        problems.ok(f'apparmor_parser -Q -K compiled packaging/kubernetes/apparmor/stockade-nested '
                    f'({len(run.stdout)} bytes of policy)')
    with open(profile) as f:
        text = f.read()
    cases = [('a misspelled rule (umountx)', text.replace('  umount,', '  umountx,'))]
    # AppArmor 3's parser knows no userns rule; AppArmor 4's does, whatever the abi.
    version = subprocess.run([parser, '--version'], capture_output=True, text=True).stdout
    major = re.search(r'version (\d+)\.', version)
    if major and int(major.group(1)) < 4:
        cases.append(('a rule AppArmor 3 lacks (userns)', text.replace('  # userns,', '  userns,')))
    with tempfile.TemporaryDirectory() as tmp:
        for what, broken in cases:
            problems.check(broken != text, f'negative check: could not make {what}')
            path = os.path.join(tmp, 'stockade-nested')
            with open(path, 'w') as f:
                f.write(broken)
            run = parse(path)
            if problems.check(run.returncode != 0,
                              f'negative check: apparmor_parser accepted {what}'):
                problems.ok(f'negative: apparmor_parser refused {what}')
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--check', choices=['manifests', 'apparmor'], default='manifests')
    ap.add_argument('repository', nargs='?', default=os.path.dirname(os.path.dirname(HERE)))
    args = ap.parse_args()
    problems = Problems()
    status = (run_manifests if args.check == 'manifests' else run_apparmor)(
        os.path.abspath(args.repository), problems)
    if status == SKIP:
        return SKIP
    for item in problems.items:
        print(f'FAIL: {item}')
    print(f'{problems.passed} passed, {len(problems.items)} failed')
    return 1 if problems.items or status else 0


if __name__ == '__main__':
    sys.exit(main())
