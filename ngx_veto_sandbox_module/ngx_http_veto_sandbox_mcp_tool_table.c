/*
 * The MCP tools' table: each tool's name, title, description, JSON
 * Schema and annotations as tools/list gives them to an agent, with the
 * twin (_mcp_tools.c, _about.c, _profiles.c) that makes
 * its call a REST request and the presenter (_mcp_present.c) that makes
 * the REST response its result, then the op groups' tools (each group's
 * file: NGX_HTTP_VSB_OP_GROUPS).  Data, and the lookups over it.
 */

#include "ngx_http_veto_sandbox_faces.h"
#include "ngx_http_veto_sandbox_mcp.h"
#include "ngx_http_veto_sandbox_discovery.h"


ngx_http_veto_sandbox_mcp_tool_t  ngx_http_veto_sandbox_mcp_tools[] = {

    { "create_sandbox", "Create a sandbox",
      "Create an isolated Linux sandbox to run commands and keep files in "
      "(its /workspace), with no network (loopback only) unless the policy "
      "allows more. Returns the sandbox's id (sandbox_id for the other "
      "tools), its limits and when it expires. Omitted fields get the "
      "policy's defaults; values above the policy's ceilings are refused. "
      "Destroy it with destroy_sandbox when done."
      NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        "\"profile\":{\"type\":\"string\",\"description\":\"A root "
        "filesystem profile the policy allows (list_profiles lists "
        "them); omitted: the policy's default.\"},"
        "\"limits\":{\"type\":\"object\",\"description\":\"Resource "
        "limits; each omitted one gets the policy's default.\","
        "\"properties\":{"
          "\"memory_mb\":{\"type\":\"integer\",\"minimum\":1},"
          "\"pids\":{\"type\":\"integer\",\"minimum\":1},"
          "\"cpu_percent\":{\"type\":\"integer\",\"minimum\":1},"
          "\"disk_mb\":{\"type\":\"integer\",\"minimum\":1},"
          "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,"
          "\"description\":\"The default time limit of each exec.\"},"
          "\"output_bytes\":{\"type\":\"integer\",\"minimum\":1,"
          "\"description\":\"How much of each output stream an exec "
          "keeps (head and tail).\"}},"
        "\"additionalProperties\":false},"
        "\"ttl_s\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
        "\"Seconds until the sandbox ends by itself.\"},"
        "\"idle_s\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
        "\"It also ends once no command ran and no call named it for "
        "this many seconds.\"},"
        "\"network\":{\"description\":\"\\\"none\\\": loopback only; or "
        "{\\\"allow\\\": [\\\"host\\\", \\\"host:port\\\", "
        "\\\"*.suffix\\\"]}: only those hosts, through the gateway's "
        "egress proxy. Omitted: the policy's default. Hosts the policy "
        "allows are granted at once; hosts it lets a human decide make "
        "the call approval required; others are refused, by name.\","
        "\"anyOf\":[{\"type\":\"string\",\"enum\":[\"none\"]},"
        "{\"type\":\"object\",\"properties\":{\"allow\":{\"type\":"
        "\"array\",\"items\":{\"type\":\"string\"}}},\"required\":"
        "[\"allow\"],\"additionalProperties\":false}]},"
        "\"credentials\":{\"type\":\"array\",\"items\":{\"type\":"
        "\"string\"},\"description\":\"The operator's credentials to "
        "attach, by name (e.g. [\\\"git-deploy\\\"]): each gives the "
        "sandbox a placeholder in its variable, and the egress proxy adds "
        "the real token on requests to the host the operator bound it "
        "to. The policy says which you may attach, and which a human "
        "must approve.\"},"
        "\"env\":{\"type\":\"object\",\"additionalProperties\":"
        "{\"type\":\"string\"},\"description\":\"Environment of every "
        "exec in the sandbox.\"},"
        "\"metadata\":{\"type\":\"object\",\"description\":\"Your own "
        "notes, kept with the sandbox.\"},"
        "\"from_snapshot\":{\"type\":\"string\",\"pattern\":"
        "\"^snap-[0-9a-f]{24}$\",\"description\":\"A fork: the new "
        "sandbox's files are this snapshot of yours (snapshot_sandbox), "
        "its profile the snapshot's; forks never see each other's "
        "writes.\"},"
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":false,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_create,
      ngx_http_veto_sandbox_mcp_present_sandbox },

    { "list_sandboxes", "List my sandboxes",
      "List the sandboxes this agent owns that are still running: id, "
      "state, limits and expiry of each.",
      "{\"type\":\"object\",\"properties\":{},"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_list,
      ngx_http_veto_sandbox_mcp_present_list },

    /* the twin and presenter are _profiles.c's */
    { "list_profiles", "List the profiles I may use",
      "The root filesystems (profiles) you may create a sandbox from: "
      "each one's name (create_sandbox's profile), whether it is an OCI "
      "image (with its sha256 digest) or a directory of this host, its "
      "OS and notable tool versions (python3, gcc, nodejs, ...), whether "
      "it is your default, whether a create of it needs a human's "
      "approval, and whether it is available now.",
      "{\"type\":\"object\",\"properties\":{},"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_profiles,
      ngx_http_veto_sandbox_mcp_present_profiles },

    /* _about.c's */
    { "describe_isolation", "What a sandbox here gets",
      "What isolates a sandbox on this host, as it is in force now: the "
      "namespaces each command runs in, the cgroup version of its limits, "
      "its seccomp filter, the kernel's Landlock ABI, the network modes "
      "available, the profiles you may use, your ceilings and the host's; "
      "and what a sandbox does not promise. Read it before trusting a "
      "sandbox with a task, rather than assuming.",
      "{\"type\":\"object\",\"properties\":{},"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_about,
      ngx_http_veto_sandbox_mcp_present_about },

    { "get_sandbox", "Show a sandbox",
      "One of this agent's sandboxes: its state, limits, usage and "
      "expiry; for one that ended lately, why (deleted, expired, idle, "
      "killed_by_limit, helper_restart, termination_failed) and when.",
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_get,
      ngx_http_veto_sandbox_mcp_present_sandbox },


    { "allow_hosts", "Let a sandbox reach more hosts",
      "Add hosts to the network allowlist of a sandbox created with one "
      "(network {\"allow\": [...]}): its commands may then connect to them "
      "through the gateway's egress proxy. An allowlist only grows; a "
      "sandbox created with network \"none\" cannot get one (create "
      "another). Hosts the policy allows are added at once, hosts it lets "
      "a human decide make the call approval required, others are "
      "refused by name." NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        "\"hosts\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
        "\"minItems\":1,\"description\":\"host, host:port or *.suffix "
        "entries, such as registry.npmjs.org or *.pythonhosted.org.\"},"
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"required\":[\"sandbox_id\",\"hosts\"],"
      "\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":true,\"openWorldHint\":true}",
      ngx_http_veto_sandbox_mcp_twin_hosts,
      ngx_http_veto_sandbox_mcp_present_hosts },

    { "extend_sandbox", "Change a sandbox's lifetime",
      "Set how long a sandbox lives: ttl_s is its whole lifetime counted "
      "from its creation (not added to what is left: the same call twice "
      "changes nothing), idle_s how long it may sit with no command "
      "running and no call naming it. Within the policy's ceilings it "
      "takes effect at once; past a ceiling, up to what the policy lets a "
      "human grant, the call is approval required; beyond, refused with "
      "the ceiling. A sandbox that ended cannot be extended: create "
      "another." NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        "\"ttl_s\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
        "\"The new lifetime in seconds, counted from the sandbox's "
        "creation.\"},"
        "\"idle_s\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
        "\"The new idle timeout in seconds, counted from now.\"},"
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":false,"
      "\"idempotentHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_lifetime,
      ngx_http_veto_sandbox_mcp_present_lifetime },

    { "destroy_sandbox", "Destroy a sandbox",
      "End a sandbox: every process in it is killed and its files are "
      "deleted, both confirmed. The result says whether that was "
      "confirmed." NGX_HTTP_VSB_MCP_APPROVAL_NOTE,
      "{\"type\":\"object\",\"properties\":{"
        NGX_HTTP_VSB_MCP_SANDBOX_ARG ","
        NGX_HTTP_VSB_MCP_APPROVAL_ARG
      "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
      "{\"readOnlyHint\":false,\"destructiveHint\":true,"
      "\"idempotentHint\":true,\"openWorldHint\":false}",
      ngx_http_veto_sandbox_mcp_twin_destroy,
      ngx_http_veto_sandbox_mcp_present_destroyed },

    { NULL, NULL, NULL, NULL, NULL, NULL, NULL }
};


/* the op groups' tools (NGX_HTTP_VSB_OP_GROUPS, faces.h), after the
 * table above's */
#define NGX_HTTP_VSB_OP_GROUP_TOOLS(g)                                        \
    extern ngx_http_veto_sandbox_mcp_tool_t                                   \
        ngx_http_veto_sandbox_##g##_tools[];
NGX_HTTP_VSB_OP_GROUPS(NGX_HTTP_VSB_OP_GROUP_TOOLS)
#undef NGX_HTTP_VSB_OP_GROUP_TOOLS

#define NGX_HTTP_VSB_OP_GROUP_TOOLS(g)  ngx_http_veto_sandbox_##g##_tools,

static ngx_http_veto_sandbox_mcp_tool_t  *ngx_http_veto_sandbox_mcp_groups[] = {
    ngx_http_veto_sandbox_mcp_tools,
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
