//! Host access: one pooled SSH connection per Playroom, Docker over it.
