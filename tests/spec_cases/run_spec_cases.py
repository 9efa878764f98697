#!/usr/bin/env python3
"""Checks `hattn run` against the float64 reference (reference.py) on the spec cases (make_cases.py).

usage: run_spec_cases.py HATTN [--cases-dir DIR]

Writes the cases into DIR (kept afterwards; it must not hold them already) or into a temporary
folder, then applies the rules of spec/cases.md to each: the whole-sequence forward and, for causal
kinds, prefill of P = 0, 1 and S/2 tokens followed by one-token decode steps must match y.npy (or
the case's y_prefill_P.npy, where the split changes the output) within the case's tolerance (1e-4
unless config.json sets one) in relative L2 error, with no NaN/Inf. A case that is not causal must
refuse --prefill with one line.
Prints one line per case; exits 1 when any case fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import make_cases


def relative_error(hattn, folder, case, expected, prefill, scratch):
    """Runs hattn once; returns ||out - y|| / ||y||, or raises RuntimeError with the reason."""
    out = os.path.join(scratch, 'out.npy')
    command = [hattn, 'run', '--case', folder, '--output', out]
    if prefill is not None:
        command += ['--prefill', str(prefill)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f'exit {result.returncode}: {result.stderr.strip()[:200]}')
    output = np.load(out).astype(np.float64)
    os.remove(out)
    if output.shape != expected.shape:
        raise RuntimeError(f'shape {output.shape}, expected {expected.shape}')
    if not np.isfinite(output).all():
        raise RuntimeError('NaN or Inf in the output')
    return np.linalg.norm(output - expected) / np.linalg.norm(expected)


def check_case(hattn, folder, scratch):
    """Returns (passed, one line describing every run of the case)."""
    with open(os.path.join(folder, 'config.json')) as f:
        case = json.load(f)
    tolerance = case.get('tolerance', 1e-4)
    expected = np.load(os.path.join(folder, 'y.npy')).astype(np.float64)
    passed = True
    runs = []
    for prefill in [None] + make_cases.prefill_lengths(case):
        label = 'forward' if prefill is None else f'P={prefill}'
        # A case whose calls' split changes its output (LongRoPE) has one expected output per split.
        wanted = expected
        if prefill is not None and case.get('outputs_by_prefill'):
            wanted = np.load(os.path.join(folder, f'y_prefill_{prefill}.npy')).astype(np.float64)
        try:
            error = relative_error(hattn, folder, case, wanted, prefill, scratch)
            runs.append(f'{label} {error:.1e}')
            passed &= bool(error <= tolerance)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            runs.append(f'{label} [{e}]')
            passed = False
    if not make_cases.prefill_lengths(case):  # not causal: --prefill is refused in one line
        out = os.path.join(scratch, 'refused.npy')
        result = subprocess.run([hattn, 'run', '--case', folder, '--output', out, '--prefill', '0'],
                                capture_output=True, text=True, timeout=300)
        refused = result.returncode == 2 and 'not causal' in result.stderr and result.stderr.count('\n') == 1
        runs.append('P=0 refused' if refused else f'P=0 [not refused: exit {result.returncode}]')
        passed &= refused and not os.path.exists(out)
    verdict = 'PASS' if passed else 'FAIL'
    return passed, f'{verdict} {os.path.basename(folder):34s} tol {tolerance:.0e}  ' + '  '.join(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('hattn', help='the hattn executable')
    parser.add_argument('--cases-dir', help='write the cases here and keep them (default: a temporary '
                                            'folder)')
    args = parser.parse_args()
    hattn = os.path.abspath(args.hattn)
    with tempfile.TemporaryDirectory(prefix='spec_cases_') as scratch:
        folders = make_cases.write_all(args.cases_dir or os.path.join(scratch, 'cases'))
        failed = 0
        for folder in folders:
            passed, line = check_case(hattn, folder, scratch)
            failed += not passed
            print(line, flush=True)
    print(f'{len(folders) - failed} of {len(folders)} spec cases passed')
    return 1 if failed or not folders else 0


if __name__ == '__main__':
    sys.exit(main())
