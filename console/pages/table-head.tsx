/**
 * A table's header row: one column header per name (scope="col", for screen readers). Roles
 * spelled out as the stacking tables' cells are (see jobs.tsx).
 */
export function TableHead({ columns }: { readonly columns: readonly string[] }) {
  return (
    <thead role="rowgroup">
      <tr role="row">
        {columns.map((name) => (
          <th key={name} scope="col" role="columnheader">
            {name}
          </th>
        ))}
      </tr>
    </thead>
  );
}
