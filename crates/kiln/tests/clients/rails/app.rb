# ActiveRecord (Rails 6.1, Debian's ruby-activerecord over ruby-pg): migrations run from files
# by a MigrationContext (advisory lock, schema_migrations, ar_internal_metadata), a later
# migration that adds, renames, changes and removes columns of a table with rows and renames a
# table, models with associations (has_many with dependent: :destroy, belongs_to, a
# has_and_belongs_to_many join table), CRUD with prepared statements, eager loading, find_each,
# insert_all / upsert_all, pessimistic locks, nested transactions (savepoints), uuid, json(b),
# array, interval and timestamp(6) columns, the schema dumper's reflection, constraint errors;
# on Kiln, the ED surface. It prints what it saw; the transcript must be the same on both.
# Usage: ruby app.rb <connection url> <true|false: the server is Kiln>
require "active_record"
require "stringio"
require "tmpdir"

url, kiln = ARGV[0], ARGV[1] == "true"
ActiveRecord::Base.establish_connection(url)
conn = ActiveRecord::Base.connection
ActiveRecord::Migration.verbose = false
def out(*parts) = puts(parts.map { |p| p.is_a?(String) ? p : p.inspect }.join(" "))

Dir.mktmpdir do |dir|
  File.write(File.join(dir, "20240101000001_create_shop.rb"), <<~RUBY)
    class CreateShop < ActiveRecord::Migration[6.1]
      def change
        enable_extension "pgcrypto" unless extension_enabled?("pgcrypto")
        create_table :authors do |t|
          t.string :name, null: false
          t.string :email, limit: 100
          t.integer :rank, default: 0
          t.decimal :balance, precision: 10, scale: 2, default: "0.0"
          t.boolean :active, default: true, null: false
          t.jsonb :prefs, default: {}
          t.json :raw
          t.string :tags, array: true, default: []
          t.interval :shift
          t.date :born
          t.text :bio
          t.binary :avatar
          t.timestamps
        end
        add_index :authors, :email, unique: true
        add_index :authors, [:rank, :name], name: "authors_rank_name"
        create_table :books, id: :uuid do |t|
          t.references :author, null: false, foreign_key: { on_delete: :cascade }
          t.string :title, null: false
          t.integer :pages
          t.float :rating
          t.bigint :isbn
          t.datetime :published_at, precision: 6
          t.timestamps
        end
        add_check_constraint :books, "pages > 0", name: "books_pages_positive"
        create_table :labels do |t|
          t.string :label, null: false, index: { unique: true }
        end
        create_table :books_labels, id: false do |t|
          t.references :book, type: :uuid, null: false, foreign_key: true, index: false
          t.references :label, null: false, foreign_key: true
          t.index [:book_id, :label_id], unique: true
        end
      end
    end
  RUBY
  ctx = ActiveRecord::MigrationContext.new(dir, ActiveRecord::SchemaMigration)
  ctx.migrate
  out "versions", ActiveRecord::SchemaMigration.all_versions
  out "environment", ActiveRecord::InternalMetadata[:environment]

  class Author < ActiveRecord::Base
    has_many :books, dependent: :destroy
    attribute :shift, :interval
  end
  class Book < ActiveRecord::Base
    belongs_to :author
    has_and_belongs_to_many :labels
  end
  class Label < ActiveRecord::Base
    has_and_belongs_to_many :books
  end

  ann = Author.create!(name: "ann", email: "ann@x.io", rank: 3, balance: "12.50",
                       prefs: { "theme" => "dark", "n" => [1, 2] }, raw: { "a" => 1 },
                       tags: %w[poet critic], shift: 2.hours + 30.minutes, born: Date.new(1990, 2, 3),
                       bio: "hi", avatar: "\x00\x01\xFF".b)
  bob = Author.create!(name: "bob", email: "bob@x.io", rank: 1, shift: 1.day)
  ann.reload
  out "ann", ann.name, ann.rank, ann.balance.to_s, ann.active, ann.prefs, ann.raw, ann.tags,
      ann.shift.inspect, ann.born.to_s, ann.avatar.bytes, ann.id == Author.first.id
  out "timestamps", ann.created_at.class.name, ann.created_at.usec.is_a?(Integer),
      ann.created_at == ann.updated_at
  pub = Time.utc(2024, 5, 6, 7, 8, 9, 123456)
  b1 = ann.books.create!(title: "Odes", pages: 120, rating: 4.5, isbn: 9_780_000_000_001, published_at: pub)
  b2 = ann.books.create!(title: "Elegies", pages: 80)
  b3 = bob.books.create!(title: "Notes", pages: 10)
  out "uuid", b1.id.match?(/\A\h{8}-\h{4}-\h{4}-\h{4}-\h{12}\z/), b1.reload.published_at.iso8601(6)
  %w[verse prose].each { |l| Label.create!(label: l) }
  b1.labels << Label.find_by!(label: "verse")
  b2.labels << Label.all
  out "labels", Book.order(:title).map { |b| [b.title, b.labels.order(:label).pluck(:label)] }
  out "eager", Author.includes(:books).order(:name).map { |a| [a.name, a.books.map(&:title).sort] }
  out "joins", Book.joins(:author).where(authors: { name: "ann" }).order(:pages).pluck(:title)
  out "group", Book.group(:author_id).count.transform_keys { |k| Author.find(k).name }.sort
  out "where", Author.where("prefs ->> 'theme' = ?", "dark").pluck(:name),
      Author.where("? = ANY(tags)", "critic").pluck(:name),
      Author.where(rank: 1..3).order(:rank).pluck(:name),
      Author.where("name ILIKE ?", "A%").count
  out "sums", Book.sum(:pages), Book.average(:pages).to_s, Book.maximum(:rating), Book.where(rating: nil).count

  ann.update!(rank: 4, tags: ann.tags + ["editor"], prefs: ann.prefs.merge("theme" => "light"))
  out "updated", Author.find(ann.id).slice(:rank, :tags, :prefs).values
  Author.where(name: "bob").update_all("rank = rank + 10")
  out "update_all", Author.find_by!(name: "bob").rank

  Author.insert_all([{ name: "cy", email: "cy@x.io", created_at: Time.now, updated_at: Time.now },
                     { name: "di", email: "di@x.io", created_at: Time.now, updated_at: Time.now }])
  Author.upsert_all([{ name: "cy2", email: "cy@x.io", rank: 7, created_at: Time.now, updated_at: Time.now }],
                    unique_by: :email)
  out "bulk", Author.order(:name).pluck(:name, :rank)
  ids = []
  Author.find_each(batch_size: 2) { |a| ids << a.name }
  out "find_each", ids.sort
  out "in_batches", Author.in_batches(of: 3).map(&:count)

  Author.transaction do
    a = Author.lock.find_by!(name: "di")
    a.update!(rank: 100)
    Author.transaction(requires_new: true) do
      Author.find_by!(name: "cy2").update!(rank: -1)
      raise ActiveRecord::Rollback
    end
  end
  out "savepoint", Author.where(name: %w[cy2 di]).order(:name).pluck(:rank)
  begin
    Author.transaction do
      Author.create!(name: "ed")
      raise "boom"
    end
  rescue RuntimeError => e
    out "rolled back", e.message, Author.where(name: "ed").exists?
  end

  [
    -> { Author.create!(name: "dup", email: "ann@x.io") },
    -> { Book.create!(author_id: 999_999, title: "orphan", pages: 1) },
    -> { Author.insert_all([{ name: nil, created_at: Time.now, updated_at: Time.now }]) },
    -> { Book.create!(author: ann, title: "bad", pages: 0) },
  ].each do |f|
    f.call
    out "no error"
  rescue ActiveRecord::ActiveRecordError => e
    out "error", e.class.name, e.cause&.class&.name
  end

  File.write(File.join(dir, "20240101000002_reshape.rb"), <<~RUBY)
    class Reshape < ActiveRecord::Migration[6.1]
      def change
        add_column :authors, :nickname, :string, default: "anon", null: false
        rename_column :authors, :bio, :about
        change_column :authors, :rank, :bigint
        change_column_default :authors, :rank, from: 0, to: 5
        change_column_null :authors, :email, true
        remove_column :authors, :raw, :json
        add_reference :books, :editor, foreign_key: { to_table: :authors }
        rename_table :labels, :categories
        add_index :books, :title
      end
    end
  RUBY
  ctx.migrate
  Author.reset_column_information
  out "versions", ActiveRecord::SchemaMigration.all_versions
  out "reshaped", Author.order(:name).pluck(:name, :nickname, :rank)
  out "columns", conn.columns(:authors).map { |c| [c.name, c.sql_type, c.null, c.default] }
  out "tables", conn.tables.sort
  out "indexes", conn.indexes(:books).map { |i| [i.name, i.columns, i.unique] }.sort
  out "foreign keys", conn.foreign_keys(:books).map { |f| [f.to_table, f.column, f.on_delete] }.sort_by(&:to_s)
  out "primary key", conn.primary_key(:books), conn.primary_key(:categories)
  out "sequence", conn.pk_and_sequence_for(:categories)&.map(&:to_s)
  dump = StringIO.new
  ActiveRecord::SchemaDumper.dump(conn, dump)
  puts dump.string.lines.reject { |l| l.start_with?("#") || l.strip.empty? }

  ann.destroy!
  out "cascade", Book.count, Author.count
  out "exec_query", conn.exec_query("SELECT $1::int + 1 AS n, $2::text AS s", "q",
                                    [ActiveRecord::Relation::QueryAttribute.new("n", 41, ActiveRecord::Type::Integer.new),
                                     ActiveRecord::Relation::QueryAttribute.new("s", "x", ActiveRecord::Type::String.new)]).to_a

  if kiln
    conn.execute("SET synchronous_commit = off")
    Author.create!(name: "fast")
    t = conn.select_value("SELECT kiln_last_txid()")
    s = conn.select_value("SELECT kiln_txn_status('#{t}')")
    raise "a fast commit is #{s}" unless %w[committed durable].include?(s)
    w = conn.select_value("SELECT kiln_wait('#{t}', 5000)")
    raise "kiln_wait gave #{w}" unless w == "durable"
    conn.execute("SET synchronous_commit = on")
    Author.create!(name: "safe")
    t = conn.select_value("SELECT kiln_last_txid()")
    d = conn.select_value("SELECT kiln_txn_status('#{t}')")
    raise "a safe commit is #{d}" unless d == "durable"
    Author.where(name: %w[fast safe]).delete_all
  end
end
puts "ok"
