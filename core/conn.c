/*
 * conn.c — what the servers of a connection share (see server.h): the
 * reply, a request taken off the loop onto the thread pool and back, and
 * the connection's end once nothing uses it any more. Its own file so that
 * serve_text.c, serve_json.c and serve_admin.c never call back into
 * server.c, which dispatches to them.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto_json.h"
#include "server.h"

void fsb_conn_reply(struct fsb_conn *conn, const char *line, int fd)
{
	fsb_chan_send(&conn->chan, line, strlen(line), fd);
}

void fsb_conn_reply_json(struct fsb_conn *conn, cJSON *reply)
{
	char *s = fsb_json_print(reply, false);
	size_t n;

	cJSON_Delete(reply);
	if (s == NULL) {
		fsb_chan_close(&conn->chan);
		return;
	}
	n = strlen(s);
	s[n] = '\n';	/* cJSON's buffer has room: it held the NUL */
	fsb_chan_send(&conn->chan, s, n + 1, -1);
	free(s);
}

void fsb_conn_free(struct fsb_conn *conn)
{
	struct fsb_server *srv = conn->srv;

	if (conn->view_fd >= 0)
		close(conn->view_fd);
	free(conn);
	if (--srv->pending_closes == 0 && srv->listeners == NULL && srv->on_closed != NULL)
		srv->on_closed(srv);
}

static void job_run(struct fsb_work *w)
{
	struct fsb_job *job = (struct fsb_job *)w;

	job->run(job);
}

static void job_done(struct fsb_work *w)
{
	struct fsb_job *job = (struct fsb_job *)w;
	struct fsb_conn *conn = job->conn;

	conn->job = NULL;
	if (conn->gone) {
		job->conn = NULL;
		job->done(job);
		fsb_conn_free(conn);
		return;
	}
	job->done(job);
	fsb_chan_resume(&conn->chan);
}

void fsb_conn_offload(struct fsb_conn *conn, struct fsb_job *job, enum fsb_work_kind kind)
{
	job->conn = conn;
	job->work.kind = kind;
	job->work.run = job_run;
	job->work.done = job_done;
	conn->job = job;
	fsb_chan_hold(&conn->chan);
	fsb_work_submit(&conn->srv->broker->work, &job->work);
}
