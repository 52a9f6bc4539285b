// Package scope is the machine-wide scope registry of seed 004: one JSON
// file, guarded by flock(2) on the file itself, recording which live holder
// may write where, and who delegated part of its scope to whom.
//
// Where each of the seed's rules lives:
//   - a scope and its syntax, `PATH:MODE[:recursive]`: Spec, ParseSpec;
//     paths resolved as the kernel would: ResolveSpec, Resolve
//   - overlap of two scopes: overlaps; of sets of scopes: Set
//   - effective scope = allow − Σ children's allow: Effective
//   - write-conflict check at start, naming each competitor:
//     Table.Register (checkConflicts)
//   - delegation (scope 分譲): checkConflicts, and RecomputeDenies for the
//     parent's scope_deny
//   - stale reclaim by PID liveness, scope handed back: at a start,
//     kill(pid, 0) for every holder and the full judgement (zombie,
//     reused pid) for those that concern the request: Table.reclaimFor
//     (Table.remove)
//   - re-parenting of a dead or released holder's children: reparent
//   - release at exit: Table.Release
//   - the file, its flock, in-place rewrite, torn-file recovery:
//     Registry.Transform (load); start and exit: Registry.Register,
//     Registry.Release; a live holder's check that it is still there:
//     Registry.Keep (Table.Restore)
//
// The registry format is exactly the seed's — {"allocations": [{"name",
// "pid", "socket", "scope_allow", "delegated_from"}]} — plus scope_deny,
// pid_start and created_at; fields other programs write are kept.
package scope
