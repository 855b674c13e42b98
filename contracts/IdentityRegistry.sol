// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/**
 * @title IdentityRegistry
 * @notice Minimal ERC-8004 Identity Registry for local development and tests. It follows the
 *         interface in data/erc8004/IdentityRegistry.abi.json (functions, events and custom
 *         errors keep the same names and signatures) so service code runs unchanged against the
 *         deployed registries.
 *
 * Differences from the reference (erc-8004/erc-8004-contracts IdentityRegistryUpgradeable):
 *  - Not upgradeable: no proxy, `initialize`, `upgradeToAndCall`, `proxiableUUID`, `Initialized`
 *    or `Upgraded`. Name, symbol, EIP-712 domain and owner are set in the constructor.
 *  - Self-contained: a hand-written minimal ERC-721 instead of OpenZeppelin (not installed here).
 *  - `setAgentWallet` is NOT simplified: it checks the same EIP-712 `AgentWalletSet` signature
 *    from the new wallet (ECDSA, then ERC-1271 for contract wallets) with the 5-minute deadline.
 */
interface IERC721Receiver {
    function onERC721Received(address operator, address from, uint256 tokenId, bytes calldata data)
        external
        returns (bytes4);
}

interface IERC1271 {
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4 magicValue);
}

contract IdentityRegistry {
    struct MetadataEntry {
        string metadataKey;
        bytes metadataValue;
    }

    // ---------------------------------------------------------------- events (as the ABI declares)
    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId);
    event ApprovalForAll(address indexed owner, address indexed operator, bool approved);
    event MetadataUpdate(uint256 _tokenId);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);
    event Registered(uint256 indexed agentId, string agentURI, address indexed owner);
    event MetadataSet(
        uint256 indexed agentId, string indexed indexedMetadataKey, string metadataKey, bytes metadataValue
    );
    event URIUpdated(uint256 indexed agentId, string newURI, address indexed updatedBy);

    // ---------------------------------------------------------------- errors (OpenZeppelin's, as in the ABI)
    error ERC721NonexistentToken(uint256 tokenId);
    error ERC721IncorrectOwner(address sender, uint256 tokenId, address owner);
    error ERC721InsufficientApproval(address operator, uint256 tokenId);
    error ERC721InvalidApprover(address approver);
    error ERC721InvalidOperator(address operator);
    error ERC721InvalidOwner(address owner);
    error ERC721InvalidReceiver(address receiver);
    error OwnableUnauthorizedAccount(address account);
    error OwnableInvalidOwner(address owner);

    // ---------------------------------------------------------------- constants
    string private constant AGENT_WALLET_KEY = "agentWallet";
    bytes32 private constant AGENT_WALLET_KEY_HASH = keccak256("agentWallet");
    bytes32 private constant AGENT_WALLET_SET_TYPEHASH =
        keccak256("AgentWalletSet(uint256 agentId,address newWallet,address owner,uint256 deadline)");
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    string private constant DOMAIN_NAME = "ERC8004IdentityRegistry";
    string private constant DOMAIN_VERSION = "1";
    uint256 private constant MAX_DEADLINE_DELAY = 5 minutes;
    bytes4 private constant ERC1271_MAGICVALUE = 0x1626ba7e;
    // secp256k1n / 2: signatures with a higher s are malleable and rejected (as OpenZeppelin's ECDSA does).
    uint256 private constant HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    // ---------------------------------------------------------------- storage
    address private _contractOwner;
    uint256 private _lastId; // agent ids start at 0, as in the reference registry
    mapping(uint256 => address) private _owners;
    mapping(address => uint256) private _balances;
    mapping(uint256 => address) private _tokenApprovals;
    mapping(address => mapping(address => bool)) private _operatorApprovals;
    mapping(uint256 => string) private _tokenURIs;
    mapping(uint256 => mapping(string => bytes)) private _metadata;
    mapping(uint256 => address) private _agentWallet;

    constructor() {
        _contractOwner = msg.sender;
        emit OwnershipTransferred(address(0), msg.sender);
    }

    // ================================================================ ERC-8004

    function register() external returns (uint256 agentId) {
        agentId = _register("");
        _checkReceiver(msg.sender, agentId);
    }

    function register(string memory agentURI) external returns (uint256 agentId) {
        agentId = _register(agentURI);
        _checkReceiver(msg.sender, agentId);
    }

    function register(string memory agentURI, MetadataEntry[] memory metadata) external returns (uint256 agentId) {
        agentId = _register(agentURI);
        for (uint256 i; i < metadata.length; i++) {
            _writeMetadata(agentId, metadata[i].metadataKey, metadata[i].metadataValue);
        }
        _checkReceiver(msg.sender, agentId);
    }

    function setAgentURI(uint256 agentId, string calldata newURI) external {
        _requireAuthorized(agentId);
        _setTokenURI(agentId, newURI);
        emit URIUpdated(agentId, newURI, msg.sender);
    }

    function getMetadata(uint256 agentId, string memory metadataKey) external view returns (bytes memory) {
        if (keccak256(bytes(metadataKey)) == AGENT_WALLET_KEY_HASH) {
            address wallet = _agentWallet[agentId];
            return wallet == address(0) ? bytes("") : abi.encodePacked(wallet);
        }
        return _metadata[agentId][metadataKey];
    }

    function setMetadata(uint256 agentId, string memory metadataKey, bytes memory metadataValue) external {
        _requireAuthorized(agentId);
        _writeMetadata(agentId, metadataKey, metadataValue);
    }

    /// @notice The agent's verified payment wallet; zero after a transfer until re-verified.
    function getAgentWallet(uint256 agentId) external view returns (address) {
        _requireOwned(agentId);
        return _agentWallet[agentId];
    }

    /// @notice Sets the payment wallet; `signature` is the new wallet's EIP-712 AgentWalletSet consent.
    function setAgentWallet(uint256 agentId, address newWallet, uint256 deadline, bytes calldata signature) external {
        require(newWallet != address(0), "bad wallet");
        require(block.timestamp <= deadline, "expired");
        require(deadline <= block.timestamp + MAX_DEADLINE_DELAY, "deadline too far");
        address holder = _requireAuthorized(agentId);

        bytes32 digest = keccak256(
            abi.encodePacked(
                "\x19\x01",
                _domainSeparator(),
                keccak256(abi.encode(AGENT_WALLET_SET_TYPEHASH, agentId, newWallet, holder, deadline))
            )
        );
        if (_recover(digest, signature) != newWallet) {
            // Not an EOA signature from newWallet: accept an ERC-1271 contract wallet's approval.
            (bool ok, bytes memory res) =
                newWallet.staticcall(abi.encodeCall(IERC1271.isValidSignature, (digest, signature)));
            require(ok && res.length >= 32 && abi.decode(res, (bytes4)) == ERC1271_MAGICVALUE, "invalid wallet sig");
        }
        _setAgentWallet(agentId, newWallet);
    }

    function unsetAgentWallet(uint256 agentId) external {
        _requireAuthorized(agentId);
        _setAgentWallet(agentId, address(0));
    }

    function getVersion() external pure returns (string memory) {
        return "1.1.0-dev";
    }

    /// @notice EIP-5267 description of the domain `setAgentWallet` signatures are made for.
    function eip712Domain()
        external
        view
        returns (
            bytes1 fields,
            string memory name_,
            string memory version,
            uint256 chainId,
            address verifyingContract,
            bytes32 salt,
            uint256[] memory extensions
        )
    {
        return (hex"0f", DOMAIN_NAME, DOMAIN_VERSION, block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    // ================================================================ ERC-721

    function name() external pure returns (string memory) {
        return "AgentIdentity";
    }

    function symbol() external pure returns (string memory) {
        return "AGENT";
    }

    function tokenURI(uint256 tokenId) external view returns (string memory) {
        _requireOwned(tokenId);
        return _tokenURIs[tokenId];
    }

    function balanceOf(address holder) external view returns (uint256) {
        if (holder == address(0)) revert ERC721InvalidOwner(address(0));
        return _balances[holder];
    }

    function ownerOf(uint256 tokenId) public view returns (address) {
        return _requireOwned(tokenId);
    }

    function approve(address to, uint256 tokenId) external {
        address holder = _requireOwned(tokenId);
        if (msg.sender != holder && !_operatorApprovals[holder][msg.sender]) revert ERC721InvalidApprover(msg.sender);
        _tokenApprovals[tokenId] = to;
        emit Approval(holder, to, tokenId);
    }

    function getApproved(uint256 tokenId) external view returns (address) {
        _requireOwned(tokenId);
        return _tokenApprovals[tokenId];
    }

    function setApprovalForAll(address operator, bool approved) external {
        if (operator == address(0)) revert ERC721InvalidOperator(operator);
        _operatorApprovals[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function isApprovedForAll(address holder, address operator) external view returns (bool) {
        return _operatorApprovals[holder][operator];
    }

    function transferFrom(address from, address to, uint256 tokenId) public {
        if (to == address(0)) revert ERC721InvalidReceiver(address(0));
        address holder = _requireOwned(tokenId);
        if (!_isAuthorized(holder, msg.sender, tokenId)) revert ERC721InsufficientApproval(msg.sender, tokenId);
        if (holder != from) revert ERC721IncorrectOwner(from, tokenId, holder);

        delete _tokenApprovals[tokenId];
        unchecked {
            _balances[from] -= 1;
            _balances[to] += 1;
        }
        _owners[tokenId] = to;
        emit Transfer(from, to, tokenId);

        // ERC-8004: a verified wallet does not follow the agent to a new owner.
        if (from != to) _setAgentWallet(tokenId, address(0));
    }

    function safeTransferFrom(address from, address to, uint256 tokenId) external {
        safeTransferFrom(from, to, tokenId, "");
    }

    function safeTransferFrom(address from, address to, uint256 tokenId, bytes memory data) public {
        transferFrom(from, to, tokenId);
        _checkReceiver(from, to, tokenId, data);
    }

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == 0x01ffc9a7 // ERC-165
            || interfaceId == 0x80ac58cd // ERC-721
            || interfaceId == 0x5b5e139f // ERC-721 Metadata
            || interfaceId == 0x49064906; // ERC-4906 metadata update events
    }

    // ================================================================ Ownable (contract admin)

    function owner() external view returns (address) {
        return _contractOwner;
    }

    function transferOwnership(address newOwner) external {
        _onlyOwner();
        if (newOwner == address(0)) revert OwnableInvalidOwner(address(0));
        emit OwnershipTransferred(_contractOwner, newOwner);
        _contractOwner = newOwner;
    }

    function renounceOwnership() external {
        _onlyOwner();
        emit OwnershipTransferred(_contractOwner, address(0));
        _contractOwner = address(0);
    }

    // ================================================================ internals

    /// @dev Mint, URI, wallet and events; the receiver callback runs last (checks-effects-interactions).
    function _register(string memory agentURI) private returns (uint256 agentId) {
        agentId = _lastId++;
        _owners[agentId] = msg.sender;
        unchecked {
            _balances[msg.sender] += 1;
        }
        emit Transfer(address(0), msg.sender, agentId);
        if (bytes(agentURI).length > 0) _setTokenURI(agentId, agentURI);
        _setAgentWallet(agentId, msg.sender);
        emit Registered(agentId, agentURI, msg.sender);
    }

    function _setTokenURI(uint256 tokenId, string memory uri) private {
        _tokenURIs[tokenId] = uri;
        emit MetadataUpdate(tokenId);
    }

    function _writeMetadata(uint256 agentId, string memory key, bytes memory value) private {
        require(keccak256(bytes(key)) != AGENT_WALLET_KEY_HASH, "reserved key");
        _metadata[agentId][key] = value;
        emit MetadataSet(agentId, key, key, value);
    }

    function _setAgentWallet(uint256 agentId, address wallet) private {
        _agentWallet[agentId] = wallet;
        bytes memory value = wallet == address(0) ? bytes("") : abi.encodePacked(wallet);
        emit MetadataSet(agentId, AGENT_WALLET_KEY, AGENT_WALLET_KEY, value);
    }

    function _requireOwned(uint256 tokenId) private view returns (address holder) {
        holder = _owners[tokenId];
        if (holder == address(0)) revert ERC721NonexistentToken(tokenId);
    }

    function _requireAuthorized(uint256 agentId) private view returns (address holder) {
        holder = _requireOwned(agentId);
        require(_isAuthorized(holder, msg.sender, agentId), "Not authorized");
    }

    function _isAuthorized(address holder, address spender, uint256 tokenId) private view returns (bool) {
        return spender == holder || _operatorApprovals[holder][spender] || _tokenApprovals[tokenId] == spender;
    }

    function _onlyOwner() private view {
        if (msg.sender != _contractOwner) revert OwnableUnauthorizedAccount(msg.sender);
    }

    function _checkReceiver(address to, uint256 tokenId) private {
        _checkReceiver(address(0), to, tokenId, "");
    }

    function _checkReceiver(address from, address to, uint256 tokenId, bytes memory data) private {
        if (to.code.length == 0) return;
        try IERC721Receiver(to).onERC721Received(msg.sender, from, tokenId, data) returns (bytes4 retval) {
            if (retval != IERC721Receiver.onERC721Received.selector) revert ERC721InvalidReceiver(to);
        } catch {
            revert ERC721InvalidReceiver(to);
        }
    }

    function _domainSeparator() private view returns (bytes32) {
        return keccak256(
            abi.encode(
                DOMAIN_TYPEHASH,
                keccak256(bytes(DOMAIN_NAME)),
                keccak256(bytes(DOMAIN_VERSION)),
                block.chainid,
                address(this)
            )
        );
    }

    /// @dev 65-byte (r, s, v) ECDSA recovery; returns address(0) for anything malformed.
    function _recover(bytes32 digest, bytes calldata sig) private pure returns (address) {
        if (sig.length != 65) return address(0);
        bytes32 r = bytes32(sig[0:32]);
        bytes32 s = bytes32(sig[32:64]);
        uint8 v = uint8(sig[64]);
        if (uint256(s) > HALF_N) return address(0);
        if (v < 27) v += 27;
        return ecrecover(digest, v, r, s);
    }
}
