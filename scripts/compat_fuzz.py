#!/usr/bin/python3
"""Differential fuzzing of `preflight analyze --compat get_training_info` against the original tool.

The original (Megatron-LM pull request 482, tools/get_training_info/get_training_info.py) is not part of
this repository; pass the path of a copy:

    /usr/bin/python3 scripts/compat_fuzz.py --original /path/to/get_training_info.py \
        --preflight build/cli/preflight --cases 1000 --seed 1 [--nasty]

Each case is a random torchrun + Megatron command line (realistic sizes, plus with --nasty: bad ints,
abbreviations, '--flag=--', negative and huge sizes, stray '--', unknown flags, odd vocab JSON files).
The verdict per case:
  - the original exits 0      → preflight must exit 0 with byte-identical stdout;
  - the original fails        → preflight must exit 2 with empty stdout;
  - the original prints help  → skipped (preflight exits 2 by design: the help text is not reproduced);
  - the original runs > 20 s  → skipped (it hangs on absurd sizes; preflight answers or exits 2).
Prints the mismatching command lines and a summary; exit status 1 if any case disagrees.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile


def write_vocab_files(folder):
    files = []
    for n in [50257, 32000, 151936, 128, 7, 1, 0]:
        path = os.path.join(folder, f"vocab{n}.json")
        with open(path, "w") as f:
            json.dump({f"tok{k}": k for k in range(n)}, f)
        files.append(path)
    odd = {
        "list.json": '[1, 2, 3, [4, 5]]',
        "string.json": '"h\\u00e9llo\\ud83d\\ude00"',
        "dupkeys.json": '{"a": 1, "a": 2, "b": 3, "\\ud800": 4}',
        "number.json": '42',
        "trailing_comma.json": '{"a": 1,}',
        "nan.json": '[NaN, Infinity, -Infinity]',
        "bom.json": '\ufeff{"a": 1}',
        "empty.json": '',
        "whitespace.json": ' \n{"a" : [ ] }\r\n',
    }
    extra = []
    for name, text in odd.items():
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        extra.append(path)
    return files, extra + [os.path.join(folder, "missing.json")]


def make_case(rng, vocabs, odd_vocabs, nasty):
    def pick(*xs):
        return rng.choice(xs)

    rate = (lambda p: p * 6) if nasty else (lambda p: p)

    def odd_int():
        return pick('0', '-1', '-8', '-0', '+4', '08', ' 8 ', '8_0', '1__0', 'x', '', '\u0663', '\u00a05',
                    '1.5', str(rng.randint(1, 10 ** rng.randint(5, 40))), str(rng.randint(1, 100000)))

    fields = {
        '--nproc_per_node': pick(1, 2, 4, 8, 8, 8, 16),
        '--nnodes': pick(1, 1, 2, 4, 8, 3),
        '--tensor-model-parallel-size': pick(1, 2, 4, 8, 1, 2),
        '--pipeline-model-parallel-size': pick(1, 2, 4, 8, 1, 2, 3),
        '--num-layers': pick(24, 32, 40, 48, 80, 96, 12, 30, 2, rng.randint(1, 128)),
        '--hidden-size': pick(1024, 2048, 4096, 5120, 8192, 12288, 16384, 768, 4544, rng.randint(1, 20000)),
        '--num-attention-heads': pick(32, 64, 96),
        '--seq-length': pick(1024, 2048, 4096, 8192, rng.randint(1, 40000)),
        '--max-position-embeddings': 4096,
        '--micro-batch-size': pick(1, 2, 4, 8, 3),
        '--global-batch-size': pick(64, 128, 512, 1024, 2048, 1536, rng.randint(1, 5000)),
        '--make_vocab_size_divisible_by': pick(128, 128, 64, 1, 256, 100),
    }
    groups = []
    for flag, value in fields.items():
        if rng.random() < rate(0.01):
            continue
        value = odd_int() if rng.random() < rate(0.015) else str(value)
        if rng.random() < rate(0.01):
            flag = flag[:rng.randint(3, len(flag))]  # abbreviation (maybe ambiguous)
        if rng.random() < rate(0.005):
            flag = flag.replace('_', '-') if '_' in flag else flag.replace('-', '_')
        groups.append([f'{flag}={value}'] if rng.random() < 0.15 else [flag, value])
    for flag in ['--use-flash-attn', '--use-distributed-optimizer', '--swiglu']:
        if rng.random() < 1 - rate(0.01):
            groups.append([flag if rng.random() > rate(0.02) else flag[:rng.randint(4, len(flag))]])
    groups += [[w] for w in pick(['--bf16'], ['--fp16'], [], ['--fp16', '--bf16'], ['--bf16'])]
    if rng.random() < 0.98:
        vocab = pick(*vocabs) if rng.random() < 1 - rate(0.02) else pick(*odd_vocabs)
        groups.append(['--vocab-file', vocab])
    junk = [['--node_rank', '0'], ['--master_addr', 'localhost'], ['--master_port', '6000'],
            ['--data-path', '/x/y'], ['--lr', '1.5e-4'], ['--train-iters', '500000'], ['--nproc-per-node', '8'],
            ['--num-layers-per-virtual-pipeline-stage', '2'], ['--ffn-hidden-size', '11008'],
            ['--split', '949,50,1'], ['--sequence-parallel'], ['--vocab-size', '32000'], ['-x'], ['-5']]
    nasty_words = ['--', '--h', '-hx', '--num', '--num-layers=--', '--seq-length=--', '--num-attention-heads=--',
                   '-', '--=5', '--fp16=', '--nnodes=-2', '--nproc_per_node=-8', '--tensor-model-parallel-size=-2',
                   '--pipeline-model-parallel-size=-1', '-1.5', '-5\n', '---x', '--vocab-file=',
                   '--make_vocab_size_divisible_by=-7', '--max-position-embeddings=x', '--swiglu', '--bf16',
                   '--global-batch-size= 7_0 ']
    for _ in range(rng.randint(0, 4)):
        if rng.random() < rate(0.02):
            groups.insert(rng.randint(0, len(groups)), [pick(*nasty_words)])
        groups.insert(rng.randint(0, len(groups)), pick(*junk))
    if rng.random() < 0.3:
        rng.shuffle(groups)
    return [w for g in groups for w in g]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--original', required=True, help='path of get_training_info.py')
    ap.add_argument('--preflight', default='build/cli/preflight')
    ap.add_argument('--python', default='/usr/bin/python3')
    ap.add_argument('--cases', type=int, default=500)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--nasty', action='store_true', help='many more malformed words')
    opt = ap.parse_args()
    rng = random.Random(opt.seed)
    counts = {'identical': 0, 'both fail': 0, 'help': 0, 'original hangs': 0, 'MISMATCH': 0}
    with tempfile.TemporaryDirectory() as folder:
        vocabs, odd = write_vocab_files(folder)
        for _ in range(opt.cases):
            args = make_case(rng, vocabs, odd, opt.nasty)
            try:
                ref = subprocess.run([opt.python, opt.original] + args, capture_output=True, timeout=20)
            except subprocess.TimeoutExpired:
                counts['original hangs'] += 1
                continue
            ours = subprocess.run([opt.preflight, 'analyze', '--compat', 'get_training_info'] + args,
                                  capture_output=True, timeout=60)
            if ref.returncode == 0 and ref.stdout.startswith(b'usage:'):
                counts['help'] += 1
            elif ref.returncode == 0 and ours.returncode == 0 and ours.stdout == ref.stdout:
                counts['identical'] += 1
            elif ref.returncode != 0 and ours.returncode == 2 and not ours.stdout:
                counts['both fail'] += 1
            else:
                counts['MISMATCH'] += 1
                print('MISMATCH', args, 'original exit', ref.returncode, ref.stderr[-200:], 'preflight exit',
                      ours.returncode, ours.stderr[:300])
    print(', '.join(f'{k}: {v}' for k, v in counts.items()))
    return 1 if counts['MISMATCH'] else 0


if __name__ == '__main__':
    sys.exit(main())
