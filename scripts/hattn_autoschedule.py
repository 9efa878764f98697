"""What scripts/tune and scripts/report-autoschedule share: generating one kernel with a chosen
schedule source from the default build's generator executable, and timing it with Halide's RunGen
at the generator's estimate shapes (the shapes the autoschedulers plan for).

A sample directory holds <kernel>.a, .h, .registration.cpp, .schedule.h (autoscheduled only),
.featurization (Adams2019 only), and the `bench` executable linked from them."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, 'build')
GENERATOR = os.path.join(BUILD, 'bin', 'hattn_generators')
HALIDE_TOOLS = '/usr/lib/x86_64-linux-gnu/halide14'
HALIDE_INCLUDE = '/usr/include/halide14'
RUNGEN_MAIN = '/usr/src/halide14/RunGenMain.cpp'
TUNED_DIR = os.path.join(ROOT, 'schedules', 'autotuned')

# Integer inputs that index other buffers need values inside the estimate shapes: RunGen's default
# fill is random, which would index far outside the cache. The values are the estimates' lengths
# (every key visible: first_key 0, the longest visible range the whole cache).
BENCH_INPUTS = {
    'attention_prefill': ['kv_len=constant:2048:[1]', 'longest_visible=2048'],
    'attention_prefill_masked': ['kv_len=constant:2048:[1]', 'longest_visible=2048'],
    'attention_decode': ['kv_len=constant:4096:[1]', 'first_key=constant:0:[1]', 'longest_visible=4096'],
}


def cmake_set(name, path=os.path.join(ROOT, 'cmake', 'hattn_targets.cmake')):
    """The value of `set(NAME value)` in a CMake file."""
    m = re.search(r'set\(%s\s+([^)\s]+)\)' % re.escape(name), open(path).read())
    if not m:
        raise SystemExit(f'{name} is not set in {path}')
    return m.group(1)


def target():
    """The autoscheduled variants' target, with the build's features, as the build compiles them."""
    return cmake_set('HATTN_X86_AUTOSCHEDULE_TARGET') + '-' + cmake_set('HATTN_FEATURES')


def kernels():
    """kernel -> (generator, [params]) from generators/kernels.cmake, the list the build uses."""
    text = open(os.path.join(ROOT, 'generators', 'kernels.cmake')).read()
    out = {}
    for call in re.findall(r'^hattn_kernel\(([^)]*)\)', text, re.M):
        words = call.split()
        name, generator, params, key = words[0], words[0], [], None
        for w in words[1:]:
            if w.isupper() and w.replace('_', '').isalnum():
                key = w
            elif key == 'GENERATOR':
                generator = w
            elif key == 'PARAMS':
                params.append(w)
        out[name] = (generator, params)
    return out


def scheduler_args(scheduler):
    """Generator arguments that select a schedule source: 'hand' (schedules/x86), 'Adams2019',
    'Mullapudi2016', or a path to a plugin .so followed by ':' and the scheduler it registers."""
    if scheduler == 'hand':
        return []
    if ':' in scheduler:
        plugin, name = scheduler.rsplit(':', 1)
    else:
        plugin, name = os.path.join(HALIDE_TOOLS, f'libautoschedule_{scheduler.lower()}.so'), scheduler
    return ['-p', plugin, '-s', name, 'auto_schedule=true']


def generate(kernel, out_dir, scheduler, env=None, timeout=600, featurization=False):
    """Runs the generator; returns (ok, log). The log is also left in out_dir/compile_log.txt."""
    generator, params = kernels()[kernel]
    os.makedirs(out_dir, exist_ok=True)
    emit = 'static_library,c_header,registration'
    if scheduler != 'hand':
        emit += ',schedule'
    if featurization:
        emit += ',featurization'
    cmd = [GENERATOR, '-g', generator, '-f', kernel, '-o', out_dir, '-e', emit,
           *scheduler_args(scheduler), f'target={target()}', *params]
    try:
        r = subprocess.run(cmd, env=dict(os.environ, **(env or {})), capture_output=True, text=True,
                           timeout=timeout)
        ok, log = r.returncode == 0, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        ok, log = False, f'timed out after {timeout} s'
    with open(os.path.join(out_dir, 'compile_log.txt'), 'w') as f:
        f.write(' '.join(cmd) + '\n' + log)
    return ok, log


def rungen_object(cache_dir):
    """RunGenMain compiled once (it is the slow part of linking a sample)."""
    obj = os.path.join(cache_dir, 'RunGenMain.o')
    if not os.path.exists(obj):
        os.makedirs(cache_dir, exist_ok=True)
        subprocess.run(['c++', '-std=c++17', '-O2', '-DHALIDE_NO_PNG', '-DHALIDE_NO_JPEG',
                        '-I' + HALIDE_INCLUDE, '-c', RUNGEN_MAIN, '-o', obj + '.tmp'], check=True)
        os.rename(obj + '.tmp', obj)
    return obj


def link_bench(kernel, sample_dir, rungen):
    d = sample_dir
    r = subprocess.run(['c++', '-std=c++17', '-I' + HALIDE_INCLUDE, rungen,
                        os.path.join(d, f'{kernel}.registration.cpp'), os.path.join(d, f'{kernel}.a'),
                        '-o', os.path.join(d, 'bench'), '-ldl', '-lpthread'], capture_output=True, text=True)
    return r.returncode == 0


def outputs(sample_dir):
    """The names of the pipeline's output buffers, as RunGen describes them."""
    r = subprocess.run([os.path.join(sample_dir, 'bench'), '--describe'], capture_output=True, text=True)
    return re.findall(r'Output "([^"]+)" is of type Buffer', r.stdout + r.stderr)


def save_outputs(kernel, sample_dir, timeout=120):
    """Runs the sample once on RunGen's seeded random inputs (the same in every sample) and saves
    each output to <sample_dir>/<name>.tmp (ImageStack format: a 5-int header, then the floats).
    Returns the paths, or None if the run failed."""
    paths = [os.path.join(sample_dir, f'{name}.tmp') for name in outputs(sample_dir)]
    cmd = [os.path.join(sample_dir, 'bench'), '--estimate_all', *BENCH_INPUTS.get(kernel, []),
           *(f'{os.path.basename(p)[:-4]}={p}' for p in paths)]
    try:
        r = subprocess.run(cmd, env=dict(os.environ, HL_NUM_THREADS='2'), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return paths if r.returncode == 0 and paths else None


def matches(paths, reference_paths, tolerance=1e-4):
    """Whether every output (float, as every hattn kernel's) is within `tolerance` of the reference,
    relative to its largest value.
    Autoscheduled schedules can be wrong (an Adams2019 prefill sample was off by 20%), so a
    schedule is timed only after its outputs match the hand-written schedule's."""
    import numpy as np
    if not paths or not reference_paths or len(paths) != len(reference_paths):
        return False
    for p, ref in zip(paths, reference_paths):
        a, b = (np.fromfile(f, dtype=np.uint8)[20:] for f in (p, ref))  # skip the header
        if a.size != b.size:
            return False
        a, b = a.view(np.float32), b.view(np.float32)
        if not np.all(np.isfinite(a)) or np.abs(a - b).max() > tolerance * max(np.abs(b).max(), 1e-30):
            return False
    return True


def bench_seconds(kernel, sample_dir, threads=2, min_time=0.2, timeout=120):
    """Best-case seconds per call at the estimate shapes, or None if it failed or timed out."""
    cmd = [os.path.join(sample_dir, 'bench'), '--estimate_all', '--benchmarks=all',
           f'--benchmark_min_time={min_time}', *BENCH_INPUTS.get(kernel, [])]
    try:
        r = subprocess.run(cmd, env=dict(os.environ, HL_NUM_THREADS=str(threads)), capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    with open(os.path.join(sample_dir, 'bench.txt'), 'w') as f:
        f.write(r.stdout + r.stderr)
    m = re.search(r'best case of ([0-9.eE+-]+) sec/iter', r.stdout)
    return float(m.group(1)) if r.returncode == 0 and m else None
