import { parseAbi } from 'viem';

/**
 * The ERC-8004 IdentityRegistry as agents and the marketplace call it: the identity surface of the
 * standard (register, setAgentURI, the agent wallet and metadata, their events), the ERC-721 it
 * extends (every agent id is a token) and its ownership. It is the interface of the registry the
 * marketplace deploys in development (contracts/IdentityRegistry.sol; a test checks it against the
 * compiled artifact), and a subset of the official registry's ABI (data/erc8004), so code written
 * against it works on both. Typed (viem's parseAbi), so calls check their function names and args.
 */
export const IDENTITY_REGISTRY_ABI = parseAbi([
  // ERC-8004 identity
  'function register() returns (uint256 agentId)',
  'function register(string agentURI) returns (uint256 agentId)',
  'function register(string agentURI, (string metadataKey, bytes metadataValue)[] metadata) returns (uint256 agentId)',
  'function setAgentURI(uint256 agentId, string newURI)',
  'function getAgentWallet(uint256 agentId) view returns (address)',
  'function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes signature)',
  'function unsetAgentWallet(uint256 agentId)',
  'function getMetadata(uint256 agentId, string metadataKey) view returns (bytes)',
  'function setMetadata(uint256 agentId, string metadataKey, bytes metadataValue)',
  'function getVersion() pure returns (string)',
  'function eip712Domain() view returns (bytes1 fields, string name_, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions)',
  'event Registered(uint256 indexed agentId, string agentURI, address indexed owner)',
  'event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy)',
  'event MetadataSet(uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue)',
  // ERC-721 (with metadata: tokenURI is the agent's registration file)
  'function name() pure returns (string)',
  'function symbol() pure returns (string)',
  'function tokenURI(uint256 tokenId) view returns (string)',
  'function balanceOf(address holder) view returns (uint256)',
  'function ownerOf(uint256 tokenId) view returns (address)',
  'function approve(address to, uint256 tokenId)',
  'function getApproved(uint256 tokenId) view returns (address)',
  'function setApprovalForAll(address operator, bool approved)',
  'function isApprovedForAll(address holder, address operator) view returns (bool)',
  'function transferFrom(address from, address to, uint256 tokenId)',
  'function safeTransferFrom(address from, address to, uint256 tokenId)',
  'function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)',
  'function supportsInterface(bytes4 interfaceId) pure returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
  'event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId)',
  'event ApprovalForAll(address indexed owner, address indexed operator, bool approved)',
  'event MetadataUpdate(uint256 _tokenId)',
  'error ERC721IncorrectOwner(address sender, uint256 tokenId, address owner)',
  'error ERC721InsufficientApproval(address operator, uint256 tokenId)',
  'error ERC721InvalidApprover(address approver)',
  'error ERC721InvalidOperator(address operator)',
  'error ERC721InvalidOwner(address owner)',
  'error ERC721InvalidReceiver(address receiver)',
  'error ERC721NonexistentToken(uint256 tokenId)',
  // Ownership of the registry
  'function owner() view returns (address)',
  'function transferOwnership(address newOwner)',
  'function renounceOwnership()',
  'event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)',
  'error OwnableInvalidOwner(address owner)',
  'error OwnableUnauthorizedAccount(address account)',
]);

/** The `type` of an ERC-8004 registration file (the document an agent's tokenURI names). */
export const REGISTRATION_TYPE = 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1';
