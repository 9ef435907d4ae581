/*
 * The MCP tools' table: the op groups' tools (each group's file:
 * NGX_HTTP_VSB_OP_GROUPS), each with its name, title, description, JSON
 * Schema and annotations as tools/list gives them to an agent, the twin
 * that makes its call a REST request (_mcp_tools.c's generic one, or the
 * group's) and the presenter that makes the REST response its result.
 * The lookups over them.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"


/* the op groups' tools (NGX_HTTP_VSB_OP_GROUPS, faces.h) */
#define NGX_HTTP_VSB_OP_GROUP_TOOLS(g)                                        \
    extern ngx_http_veto_sandbox_mcp_tool_t                                   \
        ngx_http_veto_sandbox_##g##_tools[];
NGX_HTTP_VSB_OP_GROUPS(NGX_HTTP_VSB_OP_GROUP_TOOLS)
#undef NGX_HTTP_VSB_OP_GROUP_TOOLS

#define NGX_HTTP_VSB_OP_GROUP_TOOLS(g)  ngx_http_veto_sandbox_##g##_tools,

static ngx_http_veto_sandbox_mcp_tool_t  *ngx_http_veto_sandbox_mcp_groups[] = {
    NGX_HTTP_VSB_OP_GROUPS(NGX_HTTP_VSB_OP_GROUP_TOOLS)
    NULL
};


/* each tool of each group, in order: for (tool = first(&g); tool;
 * tool = next(&g, tool)) */
static ngx_http_veto_sandbox_mcp_tool_t *
ngx_http_veto_sandbox_mcp_tool_next(ngx_http_veto_sandbox_mcp_tool_t ***g,
    ngx_http_veto_sandbox_mcp_tool_t *tool)
{
    tool = tool ? tool + 1 : **g;

    while (tool->name == NULL) {
        (*g)++;

        if (**g == NULL) {
            return NULL;
        }

        tool = **g;
    }

    return tool;
}


/* tools/list's "tools", made once per worker from the table above */
static json_t  *ngx_http_veto_sandbox_mcp_list;


static json_t *
ngx_http_veto_sandbox_mcp_tool_json(ngx_http_veto_sandbox_mcp_tool_t *t)
{
    json_t  *schema, *ann;

    schema = json_loads(t->input_schema, JSON_REJECT_DUPLICATES, NULL);
    ann = json_loads(t->annotations, JSON_REJECT_DUPLICATES, NULL);

    if (!json_is_object(schema) || !json_is_object(ann)
        || json_object_set_new(ann, "title", json_string(t->title)) != 0)
    {
        json_decref(schema);
        json_decref(ann);
        return NULL;
    }

    return json_pack("{s:s, s:s, s:s, s:o, s:o}", "name", t->name,
                     "title", t->title, "description", t->description,
                     "inputSchema", schema, "annotations", ann);
}


json_t *
ngx_http_veto_sandbox_mcp_tool_list(void)
{
    json_t                            *list, *t;
    ngx_http_veto_sandbox_mcp_tool_t  *tool, **g;

    if (ngx_http_veto_sandbox_mcp_list) {
        return ngx_http_veto_sandbox_mcp_list;
    }

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    g = ngx_http_veto_sandbox_mcp_groups;

    for (tool = ngx_http_veto_sandbox_mcp_tool_next(&g, NULL);
         tool;
         tool = ngx_http_veto_sandbox_mcp_tool_next(&g, tool))
    {
        t = ngx_http_veto_sandbox_mcp_tool_json(tool);

        if (t == NULL || json_array_append_new(list, t) != 0) {
            json_decref(list);
            return NULL;
        }
    }

    ngx_http_veto_sandbox_mcp_list = list;

    return list;
}


/* Every tool's schema and annotations parse: else "nginx -t" fails. */
ngx_int_t
ngx_http_veto_sandbox_mcp_tools_init(ngx_conf_t *cf)
{
    json_t                            *t;
    ngx_http_veto_sandbox_mcp_tool_t  *tool, **g;

    g = ngx_http_veto_sandbox_mcp_groups;

    for (tool = ngx_http_veto_sandbox_mcp_tool_next(&g, NULL);
         tool;
         tool = ngx_http_veto_sandbox_mcp_tool_next(&g, tool))
    {
        t = ngx_http_veto_sandbox_mcp_tool_json(tool);

        if (t == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "veto_sandbox: MCP tool \"%s\": its schema or "
                          "annotations are not a JSON object", tool->name);
            return NGX_ERROR;
        }

        json_decref(t);
    }

    return NGX_OK;
}


ngx_http_veto_sandbox_mcp_tool_t *
ngx_http_veto_sandbox_mcp_tool(const char *name)
{
    ngx_http_veto_sandbox_mcp_tool_t  *tool, **g;

    g = ngx_http_veto_sandbox_mcp_groups;

    for (tool = ngx_http_veto_sandbox_mcp_tool_next(&g, NULL);
         tool;
         tool = ngx_http_veto_sandbox_mcp_tool_next(&g, tool))
    {
        if (ngx_strcmp(tool->name, name) == 0) {
            return tool;
        }
    }

    return NULL;
}
