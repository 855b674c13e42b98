import { parseAbi } from 'viem';

/**
 * The ERC-8004 ReputationRegistry as clients, agents and the marketplace call it: feedback (give,
 * revoke, respond), its reads (one feedback, all of an agent's, the summary, clients, indexes and
 * response counts), its events, and the registry's ownership. It is the interface of the registry
 * the marketplace deploys in development (contracts/ReputationRegistry.sol; a test checks it
 * against the compiled artifact), and a subset of the official registry's ABI (data/erc8004;
 * everything except the UUPS upgrade surface), so code written against it works on both. Typed
 * (viem's parseAbi), so calls check their function names and args.
 */
export const REPUTATION_REGISTRY_ABI = parseAbi([
  // ERC-8004 reputation: writes
  'function giveFeedback(uint256 agentId, int128 value, uint8 valueDecimals, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
  'function revokeFeedback(uint256 agentId, uint64 feedbackIndex)',
  'function appendResponse(uint256 agentId, address clientAddress, uint64 feedbackIndex, string responseURI, bytes32 responseHash)',
  // ERC-8004 reputation: reads
  'function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex) view returns (int128 value, uint8 valueDecimals, string tag1, string tag2, bool isRevoked)',
  'function readAllFeedback(uint256 agentId, address[] clientAddresses, string tag1, string tag2, bool includeRevoked) view returns (address[] clients, uint64[] feedbackIndexes, int128[] values, uint8[] valueDecimals, string[] tag1s, string[] tag2s, bool[] revokedStatuses)',
  'function getSummary(uint256 agentId, address[] clientAddresses, string tag1, string tag2) view returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals)',
  'function getLastIndex(uint256 agentId, address clientAddress) view returns (uint64)',
  'function getClients(uint256 agentId) view returns (address[])',
  'function getResponseCount(uint256 agentId, address clientAddress, uint64 feedbackIndex, address[] responders) view returns (uint64 count)',
  'function getIdentityRegistry() view returns (address)',
  'function getVersion() pure returns (string)',
  'event NewFeedback(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, int128 value, uint8 valueDecimals, string indexed indexedTag1, string tag1, string tag2, string endpoint, string feedbackURI, bytes32 feedbackHash)',
  'event FeedbackRevoked(uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex)',
  'event ResponseAppended(uint256 indexed agentId, address indexed clientAddress, uint64 feedbackIndex, address indexed responder, string responseURI, bytes32 responseHash)',
  // Ownership of the registry
  'function owner() view returns (address)',
  'function transferOwnership(address newOwner)',
  'function renounceOwnership()',
  'event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)',
  'error OwnableInvalidOwner(address owner)',
  'error OwnableUnauthorizedAccount(address account)',
]);
