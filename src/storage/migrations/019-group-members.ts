// Members see their groups, and a user creates in its own node.
//
// Before, a group was readable only by its owners and grant holders: a member inherited everything the group owned
// (an OWNS from one of its principals) but got a 404 for the group node itself, so it could not list, read or
// search the group it was put in, nor create in it (the shared folder of the reference implementation, whose
// clients expect both). Now the node rule gives READ, SEARCH and CREATE on every principal of the caller: the
// caller itself and every node it reaches over IS_IN_GROUP alone (group_memberships of migration 005, which follows
// nothing but IS_IN_GROUP, so a group reached through an OWNS or a grant on the way is not one). UPDATE and DELETE of
// the group node stay with its owners. CREATE in a group makes an element the group owns, so every member owns it.
//
// Nothing new is materialised: the membership closure is group_memberships already (kept by its triggers, checked by
// trellis_access_index_drift()), and the search index files every node under its own id, which is one of a member's
// search keys (migration 014). The epoch (migration 016) already moves whenever a membership is deleted or
// re-pointed, the only ways a membership can be lost.
export default /* sql */ `
CREATE OR REPLACE FUNCTION trellis_node_allows(p_user uuid, p_principals uuid[], p_perm text, p_target uuid) RETURNS boolean
LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  IF p_target IS NULL OR p_user IS NULL THEN
    RETURN false;
  END IF;
  IF p_perm IN ('READ', 'SEARCH', 'CREATE') AND p_target = ANY (p_principals) THEN
    RETURN true;
  END IF;
  IF p_perm IN ('READ', 'SEARCH') AND EXISTS (
      SELECT 1 FROM elements c WHERE c.end_id = p_target AND c.type = 'CREATED' AND c.start_id = p_user) THEN
    RETURN true;
  END IF;
  RETURN trellis_granted(p_principals, p_target, trellis_grant_types(p_perm));
END
$fn$;
`;
