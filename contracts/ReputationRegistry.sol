// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/**
 * @title ReputationRegistry
 * @notice Minimal ERC-8004 Reputation Registry for local development and tests. It follows the
 *         interface in data/erc8004/ReputationRegistry.abi.json (functions, events and custom
 *         errors keep the same names and signatures) so service code runs unchanged against the
 *         deployed registries.
 *
 * Clients give an agent feedback (a signed fixed-point value with 0 to 18 decimals, two optional
 * tags, and an endpoint, URI and hash that are only emitted), may revoke their own feedback, and
 * anyone may append responses to it. Feedback indexes count from 1 per (agent, client).
 *
 * Differences from the reference (erc-8004/erc-8004-contracts ReputationRegistryUpgradeable):
 *  - Not upgradeable: no proxy, `initialize`, `upgradeToAndCall`, `proxiableUUID`,
 *    `UPGRADE_INTERFACE_VERSION`, `Initialized` or `Upgraded`, nor the UUPS/ERC-1967 errors. The
 *    identity registry and the owner are set in the constructor; plain storage, no ERC-7201 slot.
 *  - The owner is kept for interface parity only: nothing in this registry is restricted to it.
 *  - Self-feedback is refused by asking the identity registry's ERC-721 surface (`ownerOf`,
 *    `isApprovedForAll`, `getApproved`) rather than `isAuthorizedOrOwner`, which our
 *    IdentityRegistry does not have; the outcome is the same (owner and operators are refused, an
 *    unknown agent reverts with the registry's ERC721NonexistentToken).
 *  - Self-contained: no OpenZeppelin (not installed here).
 */
interface IAgentIdentityRegistry {
    function ownerOf(uint256 agentId) external view returns (address);
    function getApproved(uint256 agentId) external view returns (address);
    function isApprovedForAll(address holder, address operator) external view returns (bool);
}

contract ReputationRegistry {
    // ---------------------------------------------------------------- events (as the ABI declares)
    event NewFeedback(
        uint256 indexed agentId,
        address indexed clientAddress,
        uint64 feedbackIndex,
        int128 value,
        uint8 valueDecimals,
        string indexed indexedTag1,
        string tag1,
        string tag2,
        string endpoint,
        string feedbackURI,
        bytes32 feedbackHash
    );
    event FeedbackRevoked(uint256 indexed agentId, address indexed clientAddress, uint64 indexed feedbackIndex);
    event ResponseAppended(
        uint256 indexed agentId,
        address indexed clientAddress,
        uint64 feedbackIndex,
        address indexed responder,
        string responseURI,
        bytes32 responseHash
    );
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

    // ---------------------------------------------------------------- errors (OpenZeppelin's, as in the ABI)
    error OwnableUnauthorizedAccount(address account);
    error OwnableInvalidOwner(address owner);

    // ---------------------------------------------------------------- constants
    uint8 private constant MAX_DECIMALS = 18;
    /// @dev Bound on |value| so that value * 10^18 and sums of many of them stay far inside int256.
    int128 private constant MAX_ABS_VALUE = 1e38;
    bytes32 private constant EMPTY_HASH = keccak256("");

    // ---------------------------------------------------------------- storage
    struct Feedback {
        int128 value;
        uint8 valueDecimals;
        bool isRevoked;
        string tag1;
        string tag2;
    }

    /// @dev The tag filters of a read, hashed once; an empty tag matches every feedback.
    struct TagFilter {
        bytes32 tag1Hash;
        bytes32 tag2Hash;
    }

    /// @dev readAllFeedback's parallel arrays, gathered in one place (too many to keep on the stack).
    struct FeedbackList {
        address[] clients;
        uint64[] feedbackIndexes;
        int128[] values;
        uint8[] valueDecimals;
        string[] tag1s;
        string[] tag2s;
        bool[] revokedStatuses;
    }

    address private _contractOwner;
    address private immutable _identityRegistry;
    // agentId => client => feedbackIndex (from 1) => feedback
    mapping(uint256 => mapping(address => mapping(uint64 => Feedback))) private _feedback;
    // agentId => client => number of feedbacks given (the last index)
    mapping(uint256 => mapping(address => uint64)) private _lastIndex;
    // agentId => clients in the order of their first feedback
    mapping(uint256 => address[]) private _clients;
    mapping(uint256 => mapping(address => bool)) private _isClient;
    // agentId => client => feedbackIndex => responders in the order of their first response
    mapping(uint256 => mapping(address => mapping(uint64 => address[]))) private _responders;
    // agentId => client => feedbackIndex => responder => responses appended
    mapping(uint256 => mapping(address => mapping(uint64 => mapping(address => uint64)))) private _responseCount;

    constructor(address identityRegistry_) {
        require(identityRegistry_ != address(0), "bad identity");
        _identityRegistry = identityRegistry_;
        _contractOwner = msg.sender;
        emit OwnershipTransferred(address(0), msg.sender);
    }

    // ================================================================ ERC-8004 writes

    function giveFeedback(
        uint256 agentId,
        int128 value,
        uint8 valueDecimals,
        string memory tag1,
        string memory tag2,
        string memory endpoint,
        string memory feedbackURI,
        bytes32 feedbackHash
    ) external {
        require(valueDecimals <= MAX_DECIMALS, "too many decimals");
        require(value >= -MAX_ABS_VALUE && value <= MAX_ABS_VALUE, "value too large");
        require(!_isOwnerOrOperator(msg.sender, agentId), "Self-feedback not allowed");

        uint64 feedbackIndex = ++_lastIndex[agentId][msg.sender];
        _feedback[agentId][msg.sender][feedbackIndex] =
            Feedback({value: value, valueDecimals: valueDecimals, isRevoked: false, tag1: tag1, tag2: tag2});
        if (!_isClient[agentId][msg.sender]) {
            _isClient[agentId][msg.sender] = true;
            _clients[agentId].push(msg.sender);
        }

        // tag1 twice: once as the indexed topic (its hash), once in the data.
        emit NewFeedback(
            agentId,
            msg.sender,
            feedbackIndex,
            value,
            valueDecimals,
            tag1,
            tag1,
            tag2,
            endpoint,
            feedbackURI,
            feedbackHash
        );
    }

    function revokeFeedback(uint256 agentId, uint64 feedbackIndex) external {
        _requireIndex(agentId, msg.sender, feedbackIndex);
        Feedback storage fb = _feedback[agentId][msg.sender][feedbackIndex];
        require(!fb.isRevoked, "Already revoked");
        fb.isRevoked = true;
        emit FeedbackRevoked(agentId, msg.sender, feedbackIndex);
    }

    function appendResponse(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        string calldata responseURI,
        bytes32 responseHash
    ) external {
        require(bytes(responseURI).length > 0, "Empty URI");
        _requireIndex(agentId, clientAddress, feedbackIndex);

        mapping(address => uint64) storage counts = _responseCount[agentId][clientAddress][feedbackIndex];
        if (counts[msg.sender] == 0) _responders[agentId][clientAddress][feedbackIndex].push(msg.sender);
        counts[msg.sender] += 1;

        emit ResponseAppended(agentId, clientAddress, feedbackIndex, msg.sender, responseURI, responseHash);
    }

    // ================================================================ ERC-8004 reads

    function getIdentityRegistry() external view returns (address) {
        return _identityRegistry;
    }

    function getLastIndex(uint256 agentId, address clientAddress) external view returns (uint64) {
        return _lastIndex[agentId][clientAddress];
    }

    function getClients(uint256 agentId) external view returns (address[] memory) {
        return _clients[agentId];
    }

    function readFeedback(uint256 agentId, address clientAddress, uint64 feedbackIndex)
        external
        view
        returns (int128 value, uint8 valueDecimals, string memory tag1, string memory tag2, bool isRevoked)
    {
        _requireIndex(agentId, clientAddress, feedbackIndex);
        Feedback storage fb = _feedback[agentId][clientAddress][feedbackIndex];
        return (fb.value, fb.valueDecimals, fb.tag1, fb.tag2, fb.isRevoked);
    }

    /**
     * @notice Count and average of the unrevoked feedback the given clients gave the agent, filtered
     *         by tags. The average is taken at 18 decimals and returned at the decimals most of the
     *         counted feedback used (the fewest decimals on a tie). The client list is required: an
     *         unfiltered summary would count anyone's (Sybil) feedback.
     */
    function getSummary(uint256 agentId, address[] memory clientAddresses, string memory tag1, string memory tag2)
        external
        view
        returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals)
    {
        require(clientAddresses.length > 0, "clientAddresses required");
        int256 sumWad;
        uint64[19] memory usesOfDecimals;
        (count, sumWad, usesOfDecimals) = _tally(agentId, clientAddresses, _filter(tag1, tag2));
        if (count == 0) return (0, 0, 0);

        uint64 mostUses;
        for (uint8 d; d <= MAX_DECIMALS; d++) {
            if (usesOfDecimals[d] > mostUses) {
                mostUses = usesOfDecimals[d];
                summaryValueDecimals = d;
            }
        }
        int256 averageWad = sumWad / int256(uint256(count));
        summaryValue = int128(averageWad / int256(10 ** uint256(MAX_DECIMALS - summaryValueDecimals)));
    }

    /**
     * @notice Every feedback the given clients (all clients when the list is empty) gave the agent,
     *         filtered by tags; revoked feedback only with `includeRevoked`. Parallel arrays, in
     *         client order and then feedback index order.
     */
    function readAllFeedback(
        uint256 agentId,
        address[] memory clientAddresses,
        string memory tag1,
        string memory tag2,
        bool includeRevoked
    )
        external
        view
        returns (
            address[] memory clients,
            uint64[] memory feedbackIndexes,
            int128[] memory values,
            uint8[] memory valueDecimals,
            string[] memory tag1s,
            string[] memory tag2s,
            bool[] memory revokedStatuses
        )
    {
        if (clientAddresses.length == 0) clientAddresses = _clients[agentId];
        FeedbackList memory list = _collect(agentId, clientAddresses, _filter(tag1, tag2), includeRevoked);
        clients = list.clients;
        feedbackIndexes = list.feedbackIndexes;
        values = list.values;
        valueDecimals = list.valueDecimals;
        tag1s = list.tag1s;
        tag2s = list.tag2s;
        revokedStatuses = list.revokedStatuses;
    }

    /**
     * @notice Responses appended to feedback. A zero `clientAddress` counts over every client's
     *         feedback, a zero `feedbackIndex` over every feedback of that client; an empty
     *         `responders` list counts every responder.
     */
    function getResponseCount(
        uint256 agentId,
        address clientAddress,
        uint64 feedbackIndex,
        address[] calldata responders
    ) external view returns (uint64 count) {
        if (clientAddress == address(0)) {
            address[] storage all = _clients[agentId];
            for (uint256 i; i < all.length; i++) {
                count += _responsesToClient(agentId, all[i], responders);
            }
        } else if (feedbackIndex == 0) {
            count = _responsesToClient(agentId, clientAddress, responders);
        } else {
            count = _responsesTo(agentId, clientAddress, feedbackIndex, responders);
        }
    }

    function getVersion() external pure returns (string memory) {
        return "2.0.0-dev";
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

    /// @dev The agent's owner or one of its approved operators; reverts for an agent that does not exist.
    function _isOwnerOrOperator(address who, uint256 agentId) private view returns (bool) {
        IAgentIdentityRegistry identity = IAgentIdentityRegistry(_identityRegistry);
        address holder = identity.ownerOf(agentId);
        return who == holder || identity.isApprovedForAll(holder, who) || identity.getApproved(agentId) == who;
    }

    function _requireIndex(uint256 agentId, address clientAddress, uint64 feedbackIndex) private view {
        require(feedbackIndex > 0, "index must be > 0");
        require(feedbackIndex <= _lastIndex[agentId][clientAddress], "index out of bounds");
    }

    function _filter(string memory tag1, string memory tag2) private pure returns (TagFilter memory) {
        return TagFilter({tag1Hash: keccak256(bytes(tag1)), tag2Hash: keccak256(bytes(tag2))});
    }

    function _matches(Feedback storage fb, TagFilter memory filter) private view returns (bool) {
        if (filter.tag1Hash != EMPTY_HASH && filter.tag1Hash != keccak256(bytes(fb.tag1))) return false;
        if (filter.tag2Hash != EMPTY_HASH && filter.tag2Hash != keccak256(bytes(fb.tag2))) return false;
        return true;
    }

    /// @dev getSummary's pass over the feedback: how many count, their sum at 18 decimals, and how
    ///      often each number of decimals occurs among them.
    function _tally(uint256 agentId, address[] memory clientList, TagFilter memory filter)
        private
        view
        returns (uint64 count, int256 sumWad, uint64[19] memory usesOfDecimals)
    {
        for (uint256 i; i < clientList.length; i++) {
            address client = clientList[i];
            uint64 last = _lastIndex[agentId][client];
            for (uint64 j = 1; j <= last; j++) {
                Feedback storage fb = _feedback[agentId][client][j];
                if (!_selected(fb, filter, false)) continue;
                sumWad += int256(fb.value) * int256(10 ** uint256(MAX_DECIMALS - fb.valueDecimals));
                usesOfDecimals[fb.valueDecimals] += 1;
                count += 1;
            }
        }
    }

    function _collect(uint256 agentId, address[] memory clientList, TagFilter memory filter, bool includeRevoked)
        private
        view
        returns (FeedbackList memory list)
    {
        uint256 total;
        for (uint256 i; i < clientList.length; i++) {
            uint64 last = _lastIndex[agentId][clientList[i]];
            for (uint64 j = 1; j <= last; j++) {
                if (_selected(_feedback[agentId][clientList[i]][j], filter, includeRevoked)) total++;
            }
        }

        list.clients = new address[](total);
        list.feedbackIndexes = new uint64[](total);
        list.values = new int128[](total);
        list.valueDecimals = new uint8[](total);
        list.tag1s = new string[](total);
        list.tag2s = new string[](total);
        list.revokedStatuses = new bool[](total);

        uint256 n;
        for (uint256 i; i < clientList.length; i++) {
            address client = clientList[i];
            uint64 last = _lastIndex[agentId][client];
            for (uint64 j = 1; j <= last; j++) {
                Feedback storage fb = _feedback[agentId][client][j];
                if (!_selected(fb, filter, includeRevoked)) continue;
                list.clients[n] = client;
                list.feedbackIndexes[n] = j;
                list.values[n] = fb.value;
                list.valueDecimals[n] = fb.valueDecimals;
                list.tag1s[n] = fb.tag1;
                list.tag2s[n] = fb.tag2;
                list.revokedStatuses[n] = fb.isRevoked;
                n++;
            }
        }
    }

    function _selected(Feedback storage fb, TagFilter memory filter, bool includeRevoked) private view returns (bool) {
        return (includeRevoked || !fb.isRevoked) && _matches(fb, filter);
    }

    function _responsesToClient(uint256 agentId, address client, address[] calldata responders)
        private
        view
        returns (uint64 count)
    {
        uint64 last = _lastIndex[agentId][client];
        for (uint64 j = 1; j <= last; j++) {
            count += _responsesTo(agentId, client, j, responders);
        }
    }

    function _responsesTo(uint256 agentId, address client, uint64 feedbackIndex, address[] calldata responders)
        private
        view
        returns (uint64 count)
    {
        mapping(address => uint64) storage counts = _responseCount[agentId][client][feedbackIndex];
        if (responders.length == 0) {
            address[] storage all = _responders[agentId][client][feedbackIndex];
            for (uint256 k; k < all.length; k++) {
                count += counts[all[k]];
            }
        } else {
            for (uint256 k; k < responders.length; k++) {
                count += counts[responders[k]];
            }
        }
    }

    function _onlyOwner() private view {
        if (msg.sender != _contractOwner) revert OwnableUnauthorizedAccount(msg.sender);
    }
}
