#!/usr/bin/env node
// paradnn's inference cases of ONNX files (NAME.onnx/batch:B/BACKEND/fp32/
// infer), run on ONNX Runtime's CPU provider from Node.js (npm's
// onnxruntime-node, which ships ONNX Runtime's own CPU build), with its
// default graph optimizations (all), one thread pool of --threads threads
// and sequential execution: what a user of the engine gets. The file is
// DIR/NAME.onnx; its first input gets B examples of uniform values in
// [-1, 1]. BENCHMARK_FILTER (a regular expression) keeps the cases it
// matches. Prints JSON {case name: seconds per step}; with BENCHMARK_OUT set
// (as `paradnn compare --run-a` sets it), also writes the times there as
// Google Benchmark JSON, one run per case, under the case's own name, so
// that compare pairs them with paradnn's run of the same names.
//
//   ORT_NODE=DIR/node_modules/onnxruntime-node node bench/onnxruntime.js \
//     --dir DIR --threads 2 [--min_seconds S] NAME...
'use strict';
const fs = require('fs');
const path = require('path');

const ort = require(process.env.ORT_NODE || 'onnxruntime-node');

function parseArgs(argv) {
  const args = {threads: 1, min_seconds: 1, dir: '.', names: []};
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const flag = a.match(/^--(\w+)(?:=(.*))?$/);
    if (!flag) {
      args.names.push(a);
      continue;
    }
    const value = flag[2] !== undefined ? flag[2] : argv[++i];
    if (!(flag[1] in args)) throw new Error(`unknown flag ${a}`);
    args[flag[1]] = flag[1] === 'dir' ? value : Number(value);
  }
  return args;
}

// "resnet50.onnx/batch:8/onednn/fp32/infer" -> file and batch.
function parseCase(name, dir) {
  const parts = name.split('/');
  const batch = parts.find((p) => p.startsWith('batch:'));
  if (!parts[0].endsWith('.onnx') || !batch || parts.at(-1) !== 'infer' ||
      parts.at(-2) !== 'fp32') {
    throw new Error(`${name}: expected NAME.onnx/batch:B/.../fp32/infer`);
  }
  return {file: path.join(dir, parts[0]), batch: Number(batch.slice(6))};
}

async function timeCase(name, args) {
  const {file, batch} = parseCase(name, args.dir);
  const session = await ort.InferenceSession.create(file, {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const input = session.inputNames[0];
  // The file's input shape with its batch dimension (the first, dynamic in
  // paradnn's and PyTorch's exports) set to B.
  const meta = session.inputMetadata ?
      [].concat(session.inputMetadata).find((m) => m.name === input) :
      undefined;
  const dims = meta && meta.shape ? meta.shape.slice() : [batch, 3, 224, 224];
  dims[0] = batch;
  const size = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(size);
  let seed = 1;
  for (let i = 0; i < size; ++i) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    data[i] = (seed / 2147483648) * 2 - 1;
  }
  const feeds = {[input]: new ort.Tensor('float32', data, dims)};
  await session.run(feeds);
  await session.run(feeds);
  let n = 0;
  const start = process.hrtime.bigint();
  for (;;) {
    await session.run(feeds);
    ++n;
    const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
    if (elapsed >= args.min_seconds && n >= 3) {
      await session.release();
      return elapsed / n;
    }
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  // compare's later rounds ask for the undecided cases only, as Google
  // Benchmark's filter (a regular expression) would.
  const filter = process.env.BENCHMARK_FILTER ?
      new RegExp(process.env.BENCHMARK_FILTER) :
      null;
  const times = {};
  for (const name of args.names) {
    if (!filter || filter.test(name)) times[name] = await timeCase(name, args);
  }
  console.log(JSON.stringify(times));
  if (process.env.BENCHMARK_OUT) {
    const runs = Object.entries(times).map(([name, s]) => ({
      name, run_name: name, run_type: 'iteration', repetitions: 1,
      repetition_index: 0, iterations: 1, real_time: s * 1e3,
      cpu_time: s * 1e3, time_unit: 'ms', step_ms: s * 1e3,
    }));
    const context = {
      executable: 'bench/onnxruntime.js',
      onnxruntime: ort.env.versions ? ort.env.versions.common : 'unknown',
      threads: args.threads,
    };
    fs.writeFileSync(process.env.BENCHMARK_OUT,
                     JSON.stringify({context, benchmarks: runs}, null, 1));
  }
}

main().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
