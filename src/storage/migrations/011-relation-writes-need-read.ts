// Writing to a relation needs reading it.
//
// 004 let UPDATE, DELETE (and CREATE) on a relation that grants no access follow from the same permission on its
// start alone. A user who had tagged an element and then lost READ on it could still PATCH and DELETE the tag,
// and put a file on it, while GET answered 404: the 204 against the 404 of a missing id told whether the element
// at the other end still existed. Now such a write also needs READ on the relation (READ on both ends, or a grant
// on the relation itself), as the spec asks of an ownership claim ("read access to the claim and write permission
// to delete it"). The rules for access-granting relations are unchanged: their start user and the owners of their
// end may read them.
export default /* sql */ `
CREATE OR REPLACE FUNCTION trellis_allows(p_user uuid, p_principals uuid[], p_perm text, p_id uuid, p_start uuid, p_end uuid, p_type text)
RETURNS boolean LANGUAGE plpgsql STABLE AS $fn$
BEGIN
  IF p_id IS NULL OR p_user IS NULL THEN
    RETURN false;
  END IF;
  IF p_start IS NULL THEN
    RETURN trellis_node_allows(p_user, p_principals, p_perm, p_id);
  END IF;
  IF trellis_is_access_type(p_type) THEN
    IF p_perm IN ('READ', 'SEARCH', 'DELETE') AND p_start = p_user THEN
      RETURN true;
    END IF;
    IF trellis_granted(p_principals, p_end, ARRAY['OWNS']) THEN
      RETURN true;
    END IF;
  ELSIF p_perm IN ('UPDATE', 'DELETE', 'CREATE') AND trellis_node_allows(p_user, p_principals, p_perm, p_start)
        AND trellis_allows(p_user, p_principals, 'READ', p_id, p_start, p_end, p_type) THEN
    RETURN true;
  END IF;
  IF p_perm IN ('READ', 'SEARCH')
     AND trellis_node_allows(p_user, p_principals, 'READ', p_start)
     AND trellis_node_allows(p_user, p_principals, 'READ', p_end) THEN
    RETURN true;
  END IF;
  RETURN trellis_granted(p_principals, p_id, trellis_grant_types(p_perm));
END
$fn$;
`;
