//! A client with exactly the operator's RBAC (config/rbac), for tests that prove the permissions suffice.
