/**
 * Compiles contracts/*.sol with the npm `solc` package (the bundled WASM soljson, no compiler
 * download) and writes src/platform/chain/artifacts/<Name>.json ({abi, bytecode, deployedBytecode}).
 * The artifacts are committed, so the service never compiles at run time.
 *
 * It also vendors Multicall3 (see writeMulticall3 below).
 *
 *   npx tsx scripts/compile-contracts.ts
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import solc from 'solc';
import { parseAbi, toFunctionSelector, type AbiFunction } from 'viem';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const contractsDir = join(root, 'contracts');
const outDir = join(root, 'src/platform/chain/artifacts');

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[];
  contracts: Record<
    string,
    Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
  >;
}

function compileContracts(): void {
  const sources: Record<string, { content: string }> = {};
  for (const file of readdirSync(contractsDir)
    .filter((f) => f.endsWith('.sol'))
    .sort()) {
    sources[`contracts/${file}`] = { content: readFileSync(join(contractsDir, file), 'utf8') };
  }
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      // cancun runs on anvil's default hardfork and on Base; pinned so output does not drift with solc defaults.
      evmVersion: 'cancun',
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  for (const e of output.errors ?? []) console.error(e.formattedMessage);
  if (output.errors?.some((e) => e.severity === 'error')) process.exit(1);

  mkdirSync(outDir, { recursive: true });
  for (const [sourceName, contracts] of Object.entries(output.contracts)) {
    for (const [contractName, c] of Object.entries(contracts)) {
      if (!c.evm.bytecode.object) continue; // interfaces and abstract contracts
      const artifact = {
        contractName,
        sourceName,
        compiler: `solc ${solc.version()}`,
        settings: { optimizer: input.settings.optimizer, evmVersion: input.settings.evmVersion },
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      };
      writeFileSync(join(outDir, `${contractName}.json`), `${JSON.stringify(artifact, null, 2)}\n`);
      console.log(`wrote artifacts/${contractName}.json (${c.evm.deployedBytecode.object.length / 2} bytes runtime)`);
    }
  }
}

/**
 * Multicall3's runtime code, taken from the creation code viem ships for its "deployless"
 * multicall (viem/constants/contracts.ts `multicall3Bytecode`; not exported from the package
 * entry, so we read the file). The creation code is the standard solc preamble
 * `PUSH2 len DUP1 PUSH2 0x20 PUSH1 0 CODECOPY PUSH1 0 RETURN INVALID` followed by the runtime,
 * so the runtime is the `len` bytes after the 32-byte preamble; we check that shape.
 */
function writeMulticall3(): void {
  const require = createRequire(import.meta.url);
  const viemDir = dirname(require.resolve('viem/package.json'));
  const viemVersion = (JSON.parse(readFileSync(join(viemDir, 'package.json'), 'utf8')) as { version: string }).version;
  const text = readFileSync(join(viemDir, 'constants/contracts.ts'), 'utf8');
  const creation = /export const multicall3Bytecode\s*=\s*'0x([0-9a-f]+)'/.exec(text)?.[1];
  if (!creation) throw new Error('multicall3Bytecode not found in viem/constants/contracts.ts');

  const preamble = /^608060405234801561001057600080fd5b5061([0-9a-f]{4})806100206000396000f3fe/.exec(creation);
  if (!preamble) throw new Error('unexpected Multicall3 creation code preamble');
  const runtimeLength = parseInt(preamble[1]!, 16);
  const runtime = creation.slice(64, 64 + runtimeLength * 2);
  if (runtime.length !== runtimeLength * 2) throw new Error('Multicall3 creation code shorter than its runtime length');

  // viem's multicall3Abi is only the subset viem calls; the facilitator uses tryAggregate too.
  const abi = parseAbi(MULTICALL3_FUNCTIONS);
  for (const fn of abi as readonly AbiFunction[]) {
    // solc dispatches on PUSH4 <selector>: every function of the ABI must appear in the runtime.
    if (!runtime.includes(`63${toFunctionSelector(fn).slice(2)}`))
      throw new Error(`Multicall3 runtime lacks ${fn.name}`);
  }

  const artifact = {
    contractName: 'Multicall3',
    source: `viem@${viemVersion} constants/contracts.ts multicall3Bytecode (runtime part)`,
    address: '0xcA11bde05977b3631167028862bE2a173976CA11',
    abi,
    bytecode: `0x${creation}`,
    deployedBytecode: `0x${runtime}`,
  };
  writeFileSync(join(outDir, 'Multicall3.json'), `${JSON.stringify(artifact, null, 2)}\n`);
  console.log(`wrote artifacts/Multicall3.json (${runtimeLength} bytes runtime, from viem ${viemVersion})`);
}

/** Multicall3's full interface (mds1/multicall, the contract at 0xcA11…CA11 on every chain). */
const MULTICALL3_FUNCTIONS = [
  'struct Call { address target; bytes callData; }',
  'struct Call3 { address target; bool allowFailure; bytes callData; }',
  'struct Call3Value { address target; bool allowFailure; uint256 value; bytes callData; }',
  'struct Result { bool success; bytes returnData; }',
  'function aggregate(Call[] calls) payable returns (uint256 blockNumber, bytes[] returnData)',
  'function aggregate3(Call3[] calls) payable returns (Result[] returnData)',
  'function aggregate3Value(Call3Value[] calls) payable returns (Result[] returnData)',
  'function blockAndAggregate(Call[] calls) payable returns (uint256 blockNumber, bytes32 blockHash, Result[] returnData)',
  'function tryAggregate(bool requireSuccess, Call[] calls) payable returns (Result[] returnData)',
  'function tryBlockAndAggregate(bool requireSuccess, Call[] calls) payable returns (uint256 blockNumber, bytes32 blockHash, Result[] returnData)',
  'function getBasefee() view returns (uint256 basefee)',
  'function getBlockHash(uint256 blockNumber) view returns (bytes32 blockHash)',
  'function getBlockNumber() view returns (uint256 blockNumber)',
  'function getChainId() view returns (uint256 chainid)',
  'function getCurrentBlockCoinbase() view returns (address coinbase)',
  'function getCurrentBlockDifficulty() view returns (uint256 difficulty)',
  'function getCurrentBlockGasLimit() view returns (uint256 gaslimit)',
  'function getCurrentBlockTimestamp() view returns (uint256 timestamp)',
  'function getEthBalance(address addr) view returns (uint256 balance)',
  'function getLastBlockHash() view returns (bytes32 blockHash)',
] as const;

compileContracts();
writeMulticall3();
