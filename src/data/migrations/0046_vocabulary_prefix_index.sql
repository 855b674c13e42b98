-- A word's typo correction looks only where an index can find it: words sharing a trigram with it
-- (the trigram index), and words of its first two letters and a length within two of its own
-- (this index), whose edit distance is then computed. The vocabulary of a real marketplace holds
-- hundreds of thousands of words; the edit distance computed against each of them took 0.4-0.5 s
-- of PostgreSQL's CPU for every word it did not know (400,000 words), against 0.4-2 ms through
-- the two indexes.
CREATE INDEX search_vocabulary_prefix_length_idx ON search_vocabulary (left(word, 2), length(word));
