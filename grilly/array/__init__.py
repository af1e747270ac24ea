"""Backend-agnostic array semantics: the Array type, dtypes, promotion and every op's rules."""
