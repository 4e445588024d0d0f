-- COPY options (DELIMITER, NULL, HEADER, QUOTE, ESCAPE, FORCE_QUOTE, FORCE_NOT_NULL, FORCE_NULL;
-- the WITH (...) syntax and the older one) in and out, and their errors: run by psql on Kiln
-- and on PostgreSQL, whose outputs must be equal (`cargo test --release -p kiln --test psql`).
create table co (id int primary key, t text, n numeric);
insert into co values (1, 'a,b', 1.5), (2, null, null), (3, 'q"x', 3), (4, '', 4), (5, 'tab	in|pipe', 5);
copy co to stdout with csv header;
copy co to stdout with (format csv, header);
copy co to stdout with (format csv, header true, delimiter ';', null 'NULL');
copy co to stdout with (format csv, quote '''', escape '\');
copy co to stdout with (format csv, force_quote (t, n));
copy (select * from co order by id) to stdout with delimiter as '|' null as 'NUL';
copy co to stdout with (format text, header);
copy co to stdout with (format binary, header);
copy co to stdout with (format binary, delimiter ',');
copy co to stdout with (format text, quote '"');
copy co to stdout with (format csv, delimiter '"');
copy co to stdout with (delimiter 'a');
copy co to stdout with (format csv, null 'a,b');
copy co from stdin with (format csv, force_quote (t));
copy co to stdout with (format csv, force_not_null (t));
copy co to stdout with (format csv, force_quote (nosuch));
copy co to stdout with (encoding 'utf8');
copy co to stdout with (format csv, header false);
delete from co;
copy co from stdin with csv header;
id,t,n
1,"a,b",1.5
2,,
3,"q""x",3
\.
copy co from stdin with (format csv, delimiter ';', null 'NULL', header);
whatever;header
4;NULL;4
5;"";NULL
\.
copy co from stdin with delimiter '|' null 'NUL';
6|x\|y|6
7|NUL|NUL
\.
copy co from stdin with (format csv, quote '''', escape '\');
8,'it\'s',8
\.
copy co from stdin with (format csv, force_not_null (t), force_null (n));
9,,""
\.
select id, t, t is null as tnull, n from co order by id;
drop table co;
create table cz (a int, b int);
copy cz (a) to stdout with (format csv, force_quote (b));
copy cz (a) to stdout with (format csv, force_quote (c));
copy (select 1 as a) to stdout with (format csv, force_quote (b));
copy cz from stdin with (format csv, force_not_null (c));
drop table cz;
