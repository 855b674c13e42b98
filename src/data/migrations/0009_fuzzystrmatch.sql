-- Edit distance for search's typo correction (levenshtein over the search vocabulary).
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;
