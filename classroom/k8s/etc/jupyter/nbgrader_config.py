c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "attn-course"
c.Exchange.root = "/srv/attn-class/exchange"
