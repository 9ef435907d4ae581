-- audit_append: one entry on a tenant's audit stream, within its bounds
-- in bytes and in entries; the append itself is the prelude's
-- vsb_audit_append (KEYS and ARGV are its).
return vsb_audit_append(KEYS, ARGV)
